/* memory_touch MIB: allocates MIB MiB and writes to every page, so all of it is resident. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: memory_touch MIB\n");
        return 2;
    }
    long mib = atol(argv[1]);
    size_t size = (size_t)mib << 20;
    volatile char *p = malloc(size);
    if (p == NULL) {
        perror("malloc");
        return 3;
    }
    for (size_t i = 0; i < size; i += 4096)
        p[i] = 1;
    printf("touched %ld MiB\n", mib);
    return p[size / 2] == 1 ? 0 : 4;
}
