/* mount_tmp [mount|umount]: tries to mount a tmpfs over /tmp, or to unmount /box. The sandbox
 * must end it (verdict SV naming the call) before the call does anything. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "mount";
    int rc;
    if (strcmp(mode, "umount") == 0)
        rc = umount2("/box", MNT_DETACH);
    else
        rc = mount("none", "/tmp", "tmpfs", 0, "");
    printf("%s returned %d (%s)\n", mode, rc, rc == 0 ? "success" : strerror(errno));
    return 0;
}
