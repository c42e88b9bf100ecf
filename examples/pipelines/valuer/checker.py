"""Checker for "Square root": checker <input> <output> <answer>.
Relative error below 1e-9: OK (the test's full points); below 1e-3: PT with 5 points (testlib
exit code 7 and "points 5" on stderr); else WA. Not one number: PE.
testlib exit codes: 0 OK, 1 WA, 2 PE, 3 CF, 7 PT."""
import math
import sys


def main():
    output = open(sys.argv[2]).read().split()
    answer = float(open(sys.argv[3]).read().split()[0])
    if len(output) != 1:
        print("expected one number", file=sys.stderr)
        return 2
    try:
        value = float(output[0])
    except ValueError:
        print(f"not a number: {output[0][:30]!r}", file=sys.stderr)
        return 2
    error = abs(value - answer) / max(1.0, abs(answer)) if math.isfinite(value) else math.inf
    if error < 1e-9:
        print("exact", file=sys.stderr)
        return 0
    if error < 1e-3:
        print(f"points 5\nrelative error {error:.2g}", file=sys.stderr)
        return 7
    print(f"relative error {error:.2g}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    try:
        code = main()
    except Exception as e:  # an uncaught exception would exit 1 (WA): make it CF
        print(f"checker failed: {e!r}", file=sys.stderr)
        code = 3
    sys.exit(code)
