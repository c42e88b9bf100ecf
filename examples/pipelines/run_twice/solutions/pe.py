# Tries to pass the number through unchanged: the first checker call refuses digits (PE 1).
mode = input().strip()
print(input().strip())
