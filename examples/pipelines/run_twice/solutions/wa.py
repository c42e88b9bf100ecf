# Keeps only 6 base-26 digits: numbers from 26**6 = 308915776 on come back wrong (test 6).
mode = input().strip()
if mode == "encode":
    n = int(input())
    word = ""
    for _ in range(6):
        word = chr(ord("a") + n % 26) + word
        n //= 26
    print(word)
else:
    n = 0
    for c in input().strip():
        n = n * 26 + (ord(c) - ord("a"))
    print(n)
