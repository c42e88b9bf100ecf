/* flood [MIB]: writes MIB MiB (default 1024) to stdout as fast as it can. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 1024;
    static char chunk[1 << 16];
    memset(chunk, 'x', sizeof chunk);
    for (size_t i = 63; i < sizeof chunk; i += 64)
        chunk[i] = '\n';
    long chunks = mib * (1 << 20) / (long)sizeof chunk;
    for (long i = 0; i < chunks; i++) {
        size_t done = 0;
        while (done < sizeof chunk) {
            ssize_t n = write(1, chunk + done, sizeof chunk - done);
            if (n < 0) {
                perror("write");
                return 1;
            }
            done += (size_t)n;
        }
    }
    return 0;
}
