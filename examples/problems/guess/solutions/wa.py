# Wrong answer: linear search 1, 2, 3, ... Fine for small N (tests 0 and 1), out of guesses on
# tests 2 and 3. When the judge gives up it exits, and this program reads EOF and stops.
import sys

n = int(input())
for guess in range(1, n + 1):
    print(guess, flush=True)
    answer = sys.stdin.readline().strip()
    if answer != ">":  # "=": found; "": the judge has gone
        break
