#include <stdio.h>

int main(void) {
    int n;
    long long sum = 0, x;
    if (scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n && scanf("%lld", &x) == 1; i++) sum += x;
    printf("%lld\n", sum);
    return 0;
}
