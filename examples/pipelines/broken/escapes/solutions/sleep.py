# Sleeps 10 s: the real-time limit stays the problem's wall_time_limit (3 x 1 s + 1 s): ILE.
import time

a, b = map(int, input().split())
time.sleep(10)
print(a + b)
