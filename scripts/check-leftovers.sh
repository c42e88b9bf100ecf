#!/usr/bin/env bash
# After the whole test suite: is anything of segi left on this host? Looks for
#   - cgroup directories named segi* in every mounted cgroup hierarchy (v1 and v2),
#   - processes running as a sandbox uid (segid's pool: 100000-199999),
#   - processes whose command line mentions a test directory (segi-test-*),
#   - mounts mentioning segi-test-,
#   - temporary directories segi-test-* (in $TMPDIR or /tmp, and /var/tmp).
# Prints what it finds and exits 1 if anything is left, 0 if the host is clean.
# Run it when no segid of your own is running: a live daemon's runs count as leftovers.
set -uo pipefail

found=0
report() {
    found=1
    printf 'leftover: %s\n' "$*"
}

# cgroups: every cgroup (v1 or v2) mount point, searched below (this shell's cgroups are
# inside them, and so is anything segid made at a hierarchy's root).
while read -r mount_point; do
    [[ -d $mount_point ]] || continue
    while IFS= read -r dir; do
        report "cgroup $dir"
    done < <(find "$mount_point" -mindepth 1 -maxdepth 9 -type d -name 'segi*' -prune 2>/dev/null)
done < <(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup" || $(i+1) == "cgroup2") print $5; break } }' /proc/self/mountinfo | sort -u)

# Processes: sandbox uids, and anything mentioning a test directory.
for status in /proc/[0-9]*/status; do
    pid=${status#/proc/}
    pid=${pid%/status}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
    uids=$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "$status" 2>/dev/null) || continue
    for uid in $uids; do
        if ((uid >= 100000 && uid < 200000)); then
            report "process $pid with uid $uid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
            break
        fi
    done
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
    if [[ $cmdline == *segi-test-* && $cmdline != *check-leftovers* ]]; then
        report "process $pid mentioning a test directory: $cmdline"
    fi
done

# Mounts.
while IFS= read -r line; do
    report "mount $line"
done < <(grep -F 'segi-test-' /proc/self/mountinfo)

# Temporary directories.
declare -A seen=()
for tmp in "${TMPDIR:-/tmp}" /tmp /var/tmp; do
    [[ -d $tmp && -z ${seen[$tmp]:-} ]] || continue
    seen[$tmp]=1
    for entry in "$tmp"/segi-test-*; do
        [[ -e $entry ]] && report "temporary directory $entry"
    done
done

if ((found)); then
    echo "check-leftovers: something of segi is left on this host (see above)" >&2
    exit 1
fi
echo "check-leftovers: nothing left (no segi cgroups, sandbox processes, mounts or test directories)"
