/* Prints "uid=U euid=E" and whether it could become root: "setuid0=ok" or "setuid0=failed".
 * Installed setuid-root, it shows whether the sandbox honours the set-user-ID bit. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
    printf("uid=%d euid=%d\n", (int)getuid(), (int)geteuid());
    printf("setuid0=%s\n", setuid(0) == 0 ? "ok" : "failed");
    return 0;
}
