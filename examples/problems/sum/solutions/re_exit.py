# Runtime error: prints the right answer but exits with status 3 (a non-zero exit, signal 0).
import sys

a, b = map(int, input().split())
print(a + b)
sys.exit(3)
