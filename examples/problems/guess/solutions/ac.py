# Correct: binary search, at most ceil(log2(N + 1)) guesses. flush=True after every guess: the
# judge answers only what it has received (a full buffer would deadlock until the wall time).
import sys

n = int(input())
lo, hi = 1, n
while lo <= hi:
    mid = (lo + hi) // 2
    print(mid, flush=True)
    answer = sys.stdin.readline().strip()
    if answer == "=" or not answer:  # found, or the judge has gone (EOF)
        break
    if answer == "<":
        hi = mid - 1
    else:
        lo = mid + 1
