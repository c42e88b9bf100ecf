# Guesses 1, 2, 3, ...: fine for small N, out of guesses on test 3 (100 100).
import sys

n = int(sys.stdin.readline())
for guess in range(1, n + 1):
    print(guess, flush=True)
    reply = sys.stdin.readline().strip()
    if reply in ("correct", ""):  # "" = the interactor gave up (EOF): stop quietly
        break
