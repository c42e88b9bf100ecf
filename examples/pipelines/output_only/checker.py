"""Checker for "Factorize": checker <input> <output> <answer>.
The output must be the prime factors of the input's number in non-decreasing order, i.e. the
answer's tokens. testlib exit codes: 0 OK, 1 WA, 2 PE (not numbers), 3 CF."""
import sys


def main():
    output = open(sys.argv[2]).read().split()
    answer = open(sys.argv[3]).read().split()
    if not output or not all(t.isdigit() for t in output):
        print("the output must be numbers", file=sys.stderr)
        return 2
    if output != answer:
        print(f"expected {' '.join(answer)}, found {' '.join(output)[:100]}", file=sys.stderr)
        return 1
    print("ok", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception as e:  # an uncaught exception would exit 1 (WA): make it CF
        print(f"checker failed: {e!r}", file=sys.stderr)
        code = 3
    sys.exit(code)
