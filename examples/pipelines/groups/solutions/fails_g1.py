# Right for every n but 0 (test 2, in g1): g1 fails, so g2 (which depends on it) is not run: IG.
M = 10**9 + 7


def fib(n):
    if n == 0:
        return 0, 1
    a, b = fib(n >> 1)
    c = a * ((2 * b - a) % M) % M
    d = (a * a + b * b) % M
    return (d, (c + d) % M) if n & 1 else (c, d)


n = int(input())
print(fib(n)[0] if n else 1)  # wrong: F(0) is 0
