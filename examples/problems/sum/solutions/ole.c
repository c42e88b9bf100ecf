/* Output limit exceeded: writes "1" forever, 1 MiB per fwrite, as fast as it can. */
#include <stdio.h>
#include <string.h>

static char buf[1 << 20];

int main(void) {
    memset(buf, '1', sizeof buf);
    setvbuf(stdout, NULL, _IOFBF, 1 << 20);
    for (;;)
        fwrite(buf, 1, sizeof buf, stdout);
}
