/* kill_pid PID: sends SIGKILL to PID (-1: every process it may signal) and prints the
 * outcome: "kill PID: ok", "kill PID: ESRCH", "kill PID: EPERM" or another error. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: kill_pid PID\n");
        return 2;
    }
    int pid = atoi(argv[1]);
    int rc = kill(pid, SIGKILL);
    const char *outcome = rc == 0 ? "ok" : errno == ESRCH ? "ESRCH" : errno == EPERM ? "EPERM" : strerror(errno);
    printf("kill %d: %s\n", pid, outcome);
    return 0;
}
