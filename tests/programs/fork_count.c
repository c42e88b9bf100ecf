/* Forks children that wait, until fork fails; prints how many it made and why it stopped,
 * then kills them and exits 0. Shows the process limit as the program sees it. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    static pid_t children[100000];
    int made = 0, error = 0;
    while (made < 100000) {
        pid_t pid = fork();
        if (pid < 0) {
            error = errno;
            break;
        }
        if (pid == 0) {
            for (;;)
                pause();
        }
        children[made++] = pid;
    }
    printf("forked %d error %s\n", made, error == EAGAIN ? "EAGAIN" : strerror(error));
    fflush(stdout);
    for (int i = 0; i < made; i++)
        kill(children[i], SIGKILL);
    while (wait(NULL) > 0) {
    }
    return 0;
}
