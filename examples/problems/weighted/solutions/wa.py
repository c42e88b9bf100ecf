# Wrong answer on every test: prints 2*n instead of n*n. Score 0 (the status is still AC:
# "weighted", like "percentage", always answers AC and puts the verdict in the score).
n = int(input())
print(2 * n)
