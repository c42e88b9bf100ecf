#!/bin/bash
# Program grader (exit-code mode): nothing on stdout; exit 0 = pass (score 1), 1 = fail (score 0).
# Checks that src/app/calc.py exists and that its tests pass. Diagnostics go to stderr only:
# anything on stdout would be read as a GraderResult JSON (and fail as unparseable).
exec 1>&2   # from here on, stdout goes to stderr too
export PYTHONDONTWRITEBYTECODE=1

cd "${EVALUATE_WORKSPACE:-.}" || exit 1

if [ ! -f src/app/calc.py ]; then
    echo "check.sh: src/app/calc.py is missing" >&2
    exit 1
fi
echo "check.sh: src/app/calc.py exists" >&2

if ! python3 src/app/test_calc.py; then
    echo "check.sh: tests failed" >&2
    exit 1
fi
echo "check.sh: tests passed" >&2
exit 0
