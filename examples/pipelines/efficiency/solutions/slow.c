/* Correct, but burns about 0.3 s of CPU per test first: about a third of the points. */
#include <stdio.h>
#include <time.h>

int main(void) {
    volatile unsigned long spin = 0;
    while (clock() < (clock_t)(0.3 * CLOCKS_PER_SEC))
        spin++;
    int n;
    long long sum = 0, x;
    if (scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n && scanf("%lld", &x) == 1; i++) sum += x;
    printf("%lld\n", sum);
    return 0;
}
