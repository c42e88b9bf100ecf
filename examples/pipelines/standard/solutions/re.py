a, b = map(int, input().split())
raise RuntimeError("no sums today")
