# Wrong answer: prints a - b, right only when b == 0 (test 2). The first failed test is test 0.
a, b = map(int, input().split())
print(a - b)
