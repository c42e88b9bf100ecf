/* connect_tcp PORT [ADDR]: connects to ADDR:PORT (default 127.0.0.1). Prints "CONNECTED" and
 * exits 0 on success, else prints why and exits 1. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: connect_tcp PORT [ADDR]\n");
        return 2;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        printf("socket failed: %s\n", strerror(errno));
        return 1;
    }
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[1]))};
    inet_pton(AF_INET, argc > 2 ? argv[2] : "127.0.0.1", &addr.sin_addr);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        printf("connect failed: %s\n", strerror(errno));
        return 1;
    }
    printf("CONNECTED\n");
    return 0;
}
