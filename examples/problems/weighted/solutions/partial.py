# Partly correct, score 70 = 20 + 50: a "fast path" for n < 65536 that computes n*n in a signed
# 32-bit int, assuming the square fits; it does not from n = 46341 on, so test 1 (n = 50000)
# gets a wrapped negative number. Tests 0 (n = 7) and 2 (n = 10^9, the 64-bit path) are right.
n = int(input())
if n < 65536:
    r = (n * n) & 0xFFFFFFFF
    if r >= 1 << 31:
        r -= 1 << 32  # what int32 overflow gives in C on common machines
else:
    r = n * n
print(r)
