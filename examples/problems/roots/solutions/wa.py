# Wrong answer: always prints 0, a root only when c == 0 (test 4): 1 test of 5, score 20.
print(0)
