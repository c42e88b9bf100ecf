# Overflows like a 32-bit int: wrong on test 3 (1000000000 + 1000000000).
a, b = map(int, input().split())
s = (a + b + 2**31) % 2**32 - 2**31
print(s)
