// Fast doubling: F(2k) = F(k) (2 F(k+1) - F(k)), F(2k+1) = F(k)^2 + F(k+1)^2.
#include <iostream>
#include <utility>

typedef unsigned long long u64;
static const u64 M = 1000000007ULL;

static std::pair<u64, u64> fib(u64 n) {
    if (n == 0) return {0, 1};
    auto [a, b] = fib(n >> 1);
    u64 c = a * ((2 * b + M - a) % M) % M;
    u64 d = (a * a + b * b) % M;
    if (n & 1) return {d, (c + d) % M};
    return {c, d};
}

int main() {
    u64 n;
    std::cin >> n;
    std::cout << fib(n).first << "\n";
}
