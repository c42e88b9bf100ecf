/* Runtime error: writes through a NULL pointer -> SIGSEGV (signal 11). Both the pointer and the
 * int are volatile, so gcc -O2 must load the pointer and must do the store: it cannot drop it as
 * a dead store nor replace it with a trap instruction (SIGILL). */
#include <stddef.h>

int main(void) {
    volatile int *volatile p = NULL;
    *p = 42;
    return 0;
}
