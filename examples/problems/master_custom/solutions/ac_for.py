# Accepted: sums the input's numbers with a generator, no forbidden loop keyword in the source.
import sys

print(sum(int(token) for token in sys.stdin.read().split()))
