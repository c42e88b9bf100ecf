/* connect_unix PATH: connects to the Unix stream socket PATH ("@NAME" for the abstract name
 * NAME). Prints "CONNECTED" and exits 0 on success, else prints why and exits 1. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: connect_unix PATH\n");
        return 2;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) {
        printf("socket failed: %s\n", strerror(errno));
        return 1;
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    const char *path = argv[1];
    socklen_t len;
    if (path[0] == '@') {
        /* Abstract: a leading NUL byte, then the name, no terminator. */
        strncpy(addr.sun_path + 1, path + 1, sizeof addr.sun_path - 2);
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path + 1));
    } else {
        strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
        len = sizeof addr;
    }
    if (connect(fd, (struct sockaddr *)&addr, len) != 0) {
        printf("connect failed: %s\n", strerror(errno));
        return 1;
    }
    printf("CONNECTED\n");
    return 0;
}
