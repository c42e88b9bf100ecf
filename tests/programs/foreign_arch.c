/* foreign_arch [i386|x32]: calls ptrace(PTRACE_TRACEME) through another system call ABI of
 * this x86-64 kernel (int 0x80 for i386, the x32 bit for x32), the classic way around a
 * seccomp filter that only checks the native numbers. Prints what the call returned. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "i386";
    long ret;
    if (strcmp(mode, "x32") == 0) {
        /* x32 ptrace is 521, with __X32_SYSCALL_BIT (0x40000000) set. */
        long nr = 0x40000000L + 521;
        __asm__ volatile("syscall"
                         : "=a"(ret)
                         : "a"(nr), "D"(0L), "S"(0L), "d"(0L)
                         : "rcx", "r11", "memory");
    } else {
        /* i386 ptrace is 26; PTRACE_TRACEME is 0. */
        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(26L), "b"(0L), "c"(0L), "d"(0L), "S"(0L) : "memory");
    }
    printf("%s ptrace returned %ld\n", mode, ret);
    return 0;
}
