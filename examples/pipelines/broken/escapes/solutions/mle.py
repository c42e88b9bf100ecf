# Takes about 200 MB: above the problem's 64M, whatever the strategy asked: MLE.
a, b = map(int, input().split())
hog = bytearray(200 << 20)
print(a + b)
