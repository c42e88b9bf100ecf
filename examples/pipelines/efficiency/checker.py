"""Checker: the output must be exactly the answer's integer. checker <input> <output> <answer>.
testlib exit codes: 0 OK, 1 WA, 2 PE (not one integer), 3 CF (the checker's own failure)."""
import sys


def main():
    output = open(sys.argv[2]).read().split()
    answer = int(open(sys.argv[3]).read().split()[0])
    if len(output) != 1:
        print(f"expected one integer, found {len(output)} tokens", file=sys.stderr)
        return 2
    try:
        value = int(output[0])
    except ValueError:
        print(f"not an integer: {output[0][:30]!r}", file=sys.stderr)
        return 2
    if value != answer:
        print(f"expected {answer}, found {value}", file=sys.stderr)
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
