/* Memory limit exceeded: allocates 512 MiB in 16 MiB blocks and memsets every block, so the
 * pages are really used (malloc alone only reserves address space), then prints the answer.
 * With the 64M limit the cgroup's OOM killer ends it after the fourth block or so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK (16u << 20)

int main(void) {
    long long a, b;
    if (scanf("%lld %lld", &a, &b) != 2)
        return 1;
    for (int i = 0; i < 32; i++) { /* 32 x 16 MiB = 512 MiB */
        char *p = malloc(BLOCK);
        if (p == NULL) /* where memory is bounded as address space: RE instead */
            return 2;
        memset(p, i + 1, BLOCK);
    }
    printf("%lld\n", a + b);
    return 0;
}
