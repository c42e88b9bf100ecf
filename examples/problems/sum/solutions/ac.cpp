// Correct, in C++: two 64-bit integers.
#include <iostream>

int main() {
    long long a, b;
    if (!(std::cin >> a >> b))
        return 1;
    std::cout << a + b << '\n';
    return 0;
}
