#include <stdio.h>

int main(void) {
    FILE *in = fopen("input.txt", "r"), *out = fopen("output.txt", "w");
    int n;
    long long sum = 0, x;
    if (!in || !out || fscanf(in, "%d", &n) != 1) return 1;
    for (int i = 0; i < n && fscanf(in, "%lld", &x) == 1; i++) sum += x;
    fprintf(out, "%lld\n", sum);
    fclose(out);
    return 0;
}
