/* Prints the open file descriptors (from /proc/self/fd), one per line in order, leaving out
 * the one opened to list them. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void *a, const void *b) {
    return *(const int *)a - *(const int *)b;
}

int main(void) {
    DIR *dir = opendir("/proc/self/fd");
    if (dir == NULL) {
        perror("opendir /proc/self/fd");
        return 1;
    }
    int own = dirfd(dir), fds[4096], n = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL && n < 4096) {
        if (entry->d_name[0] == '.')
            continue;
        int fd = atoi(entry->d_name);
        if (fd != own)
            fds[n++] = fd;
    }
    closedir(dir);
    qsort(fds, (size_t)n, sizeof fds[0], by_value);
    for (int i = 0; i < n; i++)
        printf("%d\n", fds[i]);
    return 0;
}
