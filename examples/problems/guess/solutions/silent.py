# Time limit exceeded (wall time): reads N, then waits for more input instead of guessing.
# The judge waits for a guess: a deadlock, which the wall time limit (2s) ends with TLE.
import sys

n = int(input())
sys.stdin.read()  # blocks: the judge writes nothing until it gets a guess
