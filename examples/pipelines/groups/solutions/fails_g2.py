# A loop: fine up to n = 10^6 (test 4), far too slow for n = 10^18 (test 5: TLE).
M = 10**9 + 7
a, b = 0, 1
for _ in range(int(input())):
    a, b = b, (a + b) % M
print(a)
