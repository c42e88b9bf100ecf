/* Also correct, the point of the example: prints the *smaller* root, which no single model
 * output would accept, yet the judge does, since it checks f(x) and not the text.
 * Numerically stable form: q = -(b + sign(b) sqrt(D)) / 2, roots q/a and c/q (no cancellation). */
#include <math.h>
#include <stdio.h>

int main(void) {
    double a, b, c;
    if (scanf("%lf %lf %lf", &a, &b, &c) != 3)
        return 1;
    double q = -0.5 * (b + copysign(sqrt(b * b - 4 * a * c), b));
    double r1 = q / a;
    double r2 = q != 0 ? c / q : r1; /* q == 0 only when b == 0 and c == 0: double root 0 */
    printf("%.17g\n", r1 < r2 ? r1 : r2);
    return 0;
}
