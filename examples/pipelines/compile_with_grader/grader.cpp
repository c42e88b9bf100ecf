// The C++ grader: reads the test, calls the submission's sum_of(), prints the result.
#include <cstdio>
#include <vector>

#include "grader.h"

int main() {
    int n;
    if (std::scanf("%d", &n) != 1) return 3;
    std::vector<long long> numbers(n);
    for (auto &x : numbers)
        if (std::scanf("%lld", &x) != 1) return 3;
    std::printf("%lld\n", sum_of(numbers));
    return 0;
}
