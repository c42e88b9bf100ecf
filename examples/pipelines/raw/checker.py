"""Checker for "Magic square": checker <input> <submission> <answer (empty)>.
The submission is 4 lines of 4 integers. The test's input names the property checked:
rows, columns, diagonals (each sums to 34) or numbers (1 to 16, each once).
testlib exit codes: 0 OK, 1 WA, 2 PE (not a 4 x 4 grid of integers), 3 CF."""
import sys

N, MAGIC = 4, 34


def main():
    prop = open(sys.argv[1]).read().strip()
    lines = [line.split() for line in open(sys.argv[2], encoding="utf-8", errors="replace").read().splitlines() if line.strip()]
    if len(lines) != N or any(len(row) != N for row in lines):
        print(f"expected {N} lines of {N} numbers", file=sys.stderr)
        return 2
    try:
        grid = [[int(x) for x in row] for row in lines]
    except ValueError:
        print("not integers", file=sys.stderr)
        return 2
    if prop == "rows":
        sums = [sum(row) for row in grid]
    elif prop == "columns":
        sums = [sum(grid[r][c] for r in range(N)) for c in range(N)]
    elif prop == "diagonals":
        sums = [sum(grid[i][i] for i in range(N)), sum(grid[i][N - 1 - i] for i in range(N))]
    elif prop == "numbers":
        numbers = sorted(x for row in grid for x in row)
        if numbers != list(range(1, N * N + 1)):
            print("the numbers are not 1 to 16, each once", file=sys.stderr)
            return 1
        print("numbers ok", file=sys.stderr)
        return 0
    else:
        print(f"unknown property {prop!r}", file=sys.stderr)
        return 3
    if any(s != MAGIC for s in sums):
        print(f"{prop}: sums {sums}, expected {MAGIC}", file=sys.stderr)
        return 1
    print(f"{prop} ok", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception as e:  # an uncaught exception would exit 1 (WA): make it CF
        print(f"checker failed: {e!r}", file=sys.stderr)
        code = 3
    sys.exit(code)
