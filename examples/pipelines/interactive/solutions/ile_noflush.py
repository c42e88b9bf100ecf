# Binary search that forgets to flush: its guess stays in its buffer, both sides wait for each
# other until the real-time limit (wall_time_limit, by default 3 x time_limit + 1 s): ILE.
import sys

n = int(sys.stdin.readline())
lo, hi = 1, n
while lo <= hi:
    mid = (lo + hi) // 2
    print(mid)  # no flush
    reply = sys.stdin.readline().strip()
    if reply in ("correct", ""):
        break
    if reply == "higher":
        lo = mid + 1
    else:
        hi = mid - 1
