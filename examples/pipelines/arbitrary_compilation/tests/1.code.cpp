// Test 2's entry point: reads a b, prints add(a, b), and judges it itself (testlib
// style: exit 0 OK, 1 WA), as pipelines.md 2.8 assumes of test.code.
#include <cstdio>
long long add(long long a, long long b);
int main() {
    long long a, b;
    if (std::scanf("%lld %lld", &a, &b) != 2) return 3;
    long long got = add(a, b);
    std::printf("%lld\n", got);
    if (got != a + b) { std::fprintf(stderr, "add(%lld, %lld) = %lld\n", a, b, got); return 1; }
    return 0;
}
