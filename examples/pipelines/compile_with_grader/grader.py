"""The Python grader: reads the test, calls the submission's sum_of(), prints the result.

The submission runs as the program (main.py) and ends with `import grader`: importing this
module then runs the test with the submission's functions (the __main__ module)."""
import sys

import __main__


def run():
    data = sys.stdin.read().split()
    n = int(data[0])
    numbers = [int(x) for x in data[1:1 + n]]
    print(__main__.sum_of(numbers))


run()
