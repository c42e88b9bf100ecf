/* big_file NAME MIB: writes MIB MiB into the file NAME (in the working directory). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: big_file NAME MIB\n");
        return 2;
    }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror("open");
        return 1;
    }
    static char chunk[1 << 16];
    memset(chunk, 'y', sizeof chunk);
    long chunks = atol(argv[2]) * (1 << 20) / (long)sizeof chunk;
    for (long i = 0; i < chunks; i++) {
        if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) {
            printf("write failed after %ld bytes: %s\n", i * (long)sizeof chunk, strerror(errno));
            return 1;
        }
    }
    printf("wrote %ld bytes\n", chunks * (long)sizeof chunk);
    return 0;
}
