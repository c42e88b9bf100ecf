# Fast but wrong on test 2 (it drops the last number): WA 2.
n = int(input())
numbers = list(map(int, input().split()))
print(sum(numbers[: max(1, n - 1)]) if n == 2 else sum(numbers))
