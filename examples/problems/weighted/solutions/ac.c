/* Correct: n*n in 64 bits (10^18 < 2^63). Score 100. */
#include <stdio.h>

int main(void) {
    long long n;
    if (scanf("%lld", &n) != 1)
        return 1;
    printf("%lld\n", n * n);
    return 0;
}
