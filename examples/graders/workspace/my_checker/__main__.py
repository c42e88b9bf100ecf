"""Program grader (JSON mode): output.json's `status` must equal $EXPECTED_STATUS.

$API_ENDPOINT is only reported (the sandbox has no network): it shows that `env` from the grader's
config reaches the program.
"""

import json
import os
import sys

NAME = "status-check"


def main():
    endpoint = os.environ.get("API_ENDPOINT")
    expected = os.environ.get("EXPECTED_STATUS")
    root = os.environ.get("EVALUATE_WORKSPACE", ".")
    print(f"{NAME}: API_ENDPOINT={endpoint!r} EXPECTED_STATUS={expected!r}", file=sys.stderr)

    actual = None
    error = None
    try:
        with open(os.path.join(root, "output.json"), encoding="utf-8") as f:
            data = json.load(f)
        actual = data.get("status") if isinstance(data, dict) else None
    except (OSError, ValueError) as e:
        error = f"cannot read output.json: {e}"

    if expected is None:
        passed, evidence = False, "EXPECTED_STATUS is not set"
    elif error:
        passed, evidence = False, error
    else:
        passed = actual == expected
        evidence = f"status is {actual!r}, expected {expected!r}"
    print(f"{NAME}: {evidence}", file=sys.stderr)

    print(json.dumps({
        "name": NAME,
        "passed": passed,
        "score": 1.0 if passed else 0.0,
        "evidence": evidence,
        "kind": "code",
        "metadata": {"api_endpoint": endpoint, "expected": expected, "actual": actual},
    }))


main()
