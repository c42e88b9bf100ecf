#include <stdio.h>

int main(void) {
    volatile int *p = NULL;
    *p = 42; /* SIGSEGV: volatile keeps gcc -O2 from dropping the store */
    return 0;
}
