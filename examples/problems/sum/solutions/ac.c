/* Correct: two 64-bit integers (a + b reaches 2e9, past a 32-bit int). */
#include <stdio.h>

int main(void) {
    long long a, b;
    if (scanf("%lld %lld", &a, &b) != 2)
        return 1;
    printf("%lld\n", a + b);
    return 0;
}
