/* Starts threads that wait, until pthread_create fails; prints how many it made and why,
 * then exits 0 (which ends every thread). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void *wait_forever(void *arg) {
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

int main(void) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    /* Small stacks: the limit that stops the bomb must be the process limit, not memory. */
    pthread_attr_setstacksize(&attr, 64 * 1024);
    int made = 0, error = 0;
    while (made < 100000) {
        pthread_t thread;
        error = pthread_create(&thread, &attr, wait_forever, NULL);
        if (error != 0)
            break;
        made++;
    }
    printf("threads %d error %s\n", made, error == EAGAIN ? "EAGAIN" : strerror(error));
    fflush(stdout);
    return 0;
}
