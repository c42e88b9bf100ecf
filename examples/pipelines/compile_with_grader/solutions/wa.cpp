// Sums in an int: overflows on test 4 (1 + 2 + ... + 100000).
#include "grader.h"

long long sum_of(const std::vector<long long> &numbers) {
    int sum = 0;
    for (long long x : numbers) sum += (int)x;
    return sum;
}
