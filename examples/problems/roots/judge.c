/* Test case judge of "roots": is the user's number a root of a*x^2 + b*x + c?
 *
 * Streams (file descriptors only, never file names):
 *   0  the test input: "a b c"             3  the user's output: one number
 *   6  debug, for the problem setter       7  a short note the user sees
 * Exit 0 = AC, 1 = WA, 2 = a broken test (the judge's fault: IE). Nothing on fd 1: score 0.
 *
 * Tolerance: |f(x)| <= 1e-6 * max(1, S) where S = |a|x^2 + |b||x| + |c|, the size of the terms
 * being added. An exact root makes f(x) = 0, but x is printed in decimal and f is evaluated in
 * double, so f(x) is off by about (error of x) * |f'(x)| plus rounding of terms as large as S.
 * Scaling by S makes the check relative: near a simple root it asks for roughly 6 correct
 * significant digits of x, whatever the size of the coefficients; far from a root, |f(x)| is
 * close to S itself and fails. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define AC 0
#define WA 1
#define IE 2

static int verdict(int code, const char *note) {
    dprintf(7, "%s\n", note);
    return code;
}

int main(void) {
    long long a, b, c;
    if (scanf("%lld %lld %lld", &a, &b, &c) != 3 || a == 0 || b * b - 4 * a * c < 0) {
        dprintf(6, "bad test input: expected a b c with a != 0 and b^2 - 4ac >= 0\n");
        return IE;
    }

    /* The user's whole output, at most 4 KiB: one number, whitespace around it allowed. */
    static char out[4097];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof out - 1 && (n = read(3, out + len, sizeof out - 1 - len)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return IE;
        }
        len += (size_t)n;
    }
    if (len == sizeof out - 1)
        return verdict(WA, "expected one number, got 4 KiB of output or more");
    out[len] = '\0';

    char *end;
    errno = 0;
    double x = strtod(out, &end);
    if (end == out)
        return verdict(WA, "expected one number, got none");
    while (isspace((unsigned char)*end))
        end++;
    if (*end != '\0')
        return verdict(WA, "expected one number, got more after it");
    if (!isfinite(x)) /* strtod also reads "nan", "inf" and overflows to inf */
        return verdict(WA, "expected a finite number");

    double fx = ((double)a * x + (double)b) * x + (double)c;
    double scale = fabs((double)a) * x * x + fabs((double)b) * fabs(x) + fabs((double)c);
    double tol = 1e-6 * (scale > 1 ? scale : 1);
    dprintf(6, "a=%lld b=%lld c=%lld x=%.17g f(x)=%.6g tolerance=%.6g\n", a, b, c, x, fx, tol);

    char note[128];
    snprintf(note, sizeof note, "f(x) = %.2g", fx);
    return verdict(fabs(fx) <= tol ? AC : WA, note);
}
