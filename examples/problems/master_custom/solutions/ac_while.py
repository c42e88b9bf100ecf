# Correct output, but WA: the source uses a while loop, which the master judge forbids.
tokens = input().split()
total = 0
i = 0
while i < len(tokens):
    total += int(tokens[i])
    i += 1
print(total)
