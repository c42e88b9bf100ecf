# A testlib-style checker: argv[1] input, argv[2] output, argv[3] answer; exit 0 OK, 1 WA.
import sys

output, answer = open(sys.argv[2]).read().split(), open(sys.argv[3]).read().split()
if output == answer:
    sys.exit(0)
print(f"expected {' '.join(answer)}, got {' '.join(output) or 'nothing'}", file=sys.stderr)
sys.exit(1)
