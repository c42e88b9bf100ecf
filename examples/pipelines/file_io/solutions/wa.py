# Forgets the first number: wrong on test 1.
with open("input.txt") as f:
    n = int(f.readline())
    numbers = list(map(int, f.readline().split()))
with open("output.txt", "w") as f:
    print(sum(numbers[1:n]), file=f)
