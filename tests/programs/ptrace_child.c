/* ptrace_child [attach|traceme]: tries to trace another process (its own child) or to be
 * traced. The sandbox must end it (verdict SV) before the call does anything. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "attach";
    long rc;
    if (strcmp(mode, "traceme") == 0) {
        rc = ptrace(PTRACE_TRACEME, 0, NULL, NULL);
    } else {
        pid_t child = fork();
        if (child == 0) {
            for (;;)
                pause();
        }
        rc = ptrace(PTRACE_ATTACH, child, NULL, NULL);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    printf("ptrace %s returned %ld (%s)\n", mode, rc, rc == 0 ? "success" : strerror(errno));
    return 0;
}
