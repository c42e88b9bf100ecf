/* Prints its arguments, one per line, after "hello". */
#include <stdio.h>

int main(int argc, char **argv) {
    printf("hello\n");
    for (int i = 1; i < argc; i++)
        printf("%s\n", argv[i]);
    return 0;
}
