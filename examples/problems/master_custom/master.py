"""Master judge of "master_custom": forbidden structures (Sphere Engine's master judge example).

Streams (file descriptors only, never file names):
  0  one line per test, in test order: N STATUS SCORE SIGNAL TIME MEMORY
  5  the submission's source
  1  the verdict, one line: STATUS SCORE SIGNAL TIME MEMORY
  6  debug: the tests as report lines, and why
The rule: a source with the word "while" (anywhere, comments and strings included: a plain text
search, as the handbook's example) is WA with score 0, keeping the tests' total time and peak
memory. Otherwise as "generic": all AC -> AC with the average score; else the first failed
test's status and signal, score 0. Time is summed, memory the maximum.
"""
import os
import re
import sys

FORBIDDEN = re.compile(rb"\bwhile\b")


def log(msg):
    try:
        os.write(6, (msg + "\n").encode())
    except OSError:
        pass  # fd 6 not open (run by hand)


tests = []
for line in sys.stdin:
    if not line.strip():
        continue
    n, status, score, signal, time, memory = line.split()
    tests.append((int(n), status, float(score), int(signal), float(time), int(memory)))
    log(f"test {n} - {status} (score={score}, sig={signal}, time={time}, mem={memory})")

if not tests:
    log("no tests")
    print("IE 0 0 0 0")
    sys.exit(0)

with open(5, "rb", closefd=False) as f:
    source = f.read()

time = sum(t[4] for t in tests)
memory = max(t[5] for t in tests)
failed = [t for t in tests if t[1] != "AC"]
if FORBIDDEN.search(source):
    log('the source uses "while": WA')
    print(f"WA 0 0 {time:.2f} {memory}")
elif failed:
    _, status, _, signal, _, _ = failed[0]
    print(f"{status} 0 {signal} {time:.2f} {memory}")
else:
    score = sum(t[2] for t in tests) / len(tests)
    print(f"AC {score:.2f} 0 {time:.2f} {memory}")
