/* unshare_user [unshare|clone|setns]: tries to make or join a namespace. The sandbox must end
 * it (verdict SV naming the call) before the call does anything. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "unshare";
    long rc;
    if (strcmp(mode, "clone") == 0) {
        /* The raw system call, so that libc cannot choose clone3 instead. */
        rc = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
        if (rc == 0)
            _exit(0);
        if (rc > 0)
            waitpid((pid_t)rc, NULL, 0);
    } else if (strcmp(mode, "setns") == 0) {
        int fd = open("/proc/self/ns/user", O_RDONLY);
        rc = setns(fd, CLONE_NEWUSER);
    } else {
        rc = unshare(CLONE_NEWUSER);
    }
    printf("%s returned %ld (%s)\n", mode, rc, rc >= 0 ? "success" : strerror(errno));
    return 0;
}
