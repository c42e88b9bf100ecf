# Base 26 with the letters a..z: 0 is "a".
mode = input().strip()
if mode == "encode":
    n = int(input())
    word = ""
    while True:
        word = chr(ord("a") + n % 26) + word
        n //= 26
        if n == 0:
            break
    print(word)
else:
    word = input().strip()
    n = 0
    for c in word:
        n = n * 26 + (ord(c) - ord("a"))
    print(n)
