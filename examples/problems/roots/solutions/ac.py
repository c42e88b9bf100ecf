# Correct: prints the larger root, (-b +- sqrt(b^2 - 4ac)) / 2a, whichever is bigger.
import math

a, b, c = map(int, input().split())
d = math.sqrt(b * b - 4 * a * c)
print(max((-b + d) / (2 * a), (-b - d) / (2 * a)))
