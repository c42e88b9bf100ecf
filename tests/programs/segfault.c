/* Dereferences a bad address the compiler cannot see coming: a real SIGSEGV. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    /* Address 16 unless told otherwise; read from argv so -O2 cannot fold it into a trap. */
    volatile int *p = (volatile int *)(uintptr_t)strtoul(argc > 1 ? argv[1] : "16", NULL, 0);
    printf("about to crash\n");
    fflush(stdout);
    *p = 42;
    return 0;
}
