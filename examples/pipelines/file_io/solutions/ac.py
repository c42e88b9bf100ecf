with open("input.txt") as f:
    n = int(f.readline())
    numbers = list(map(int, f.readline().split()))
with open("output.txt", "w") as f:
    print(sum(numbers[:n]), file=f)
