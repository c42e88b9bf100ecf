# Fast doubling: F(2k) = F(k) (2 F(k+1) - F(k)), F(2k+1) = F(k)^2 + F(k+1)^2.
M = 10**9 + 7


def fib(n):
    if n == 0:
        return 0, 1
    a, b = fib(n >> 1)
    c = a * ((2 * b - a) % M) % M
    d = (a * a + b * b) % M
    return (d, (c + d) % M) if n & 1 else (c, d)


print(fib(int(input()))[0])
