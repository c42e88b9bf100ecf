# Wrong on purpose: prints a - b (right only when b == 0).
a, b = map(int, input().split())
print(a - b)
