import math

print(f"{math.sqrt(float(input())):.12f}")
