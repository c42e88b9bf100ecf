/* Correct, in C: binary search; fflush(stdout) after every guess, or the guess sits in the
 * buffer while the judge waits for it (a deadlock, ended by the wall time: TLE). */
#include <stdio.h>

int main(void) {
    long long n;
    if (scanf("%lld", &n) != 1)
        return 1;
    long long lo = 1, hi = n;
    while (lo <= hi) {
        long long mid = lo + (hi - lo) / 2;
        printf("%lld\n", mid);
        fflush(stdout);
        char answer;
        if (scanf(" %c", &answer) != 1 || answer == '=') /* EOF: the judge has gone */
            break;
        if (answer == '<')
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return 0;
}
