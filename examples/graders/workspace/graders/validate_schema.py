#!/usr/bin/env python3
"""Program grader (JSON mode): check output.json in the workspace against a small schema.

Score = the fraction of checks that passed; passed only when all of them did.
Prints exactly one GraderResult JSON object on stdout; diagnostics go to stderr.
"""

import json
import os
import sys

NAME = "output-schema"
STATUSES = ("active", "inactive", "pending")


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def main():
    root = os.environ.get("EVALUATE_WORKSPACE", ".")
    path = os.path.join(root, "output.json")
    checks = []  # (name, ok, why)

    data = None
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        checks.append(("object", isinstance(data, dict), "output.json is a JSON object"))
    except (OSError, ValueError) as e:
        print(f"{NAME}: cannot read {path}: {e}", file=sys.stderr)
        checks.append(("object", False, f"output.json unreadable: {e}"))
    if not isinstance(data, dict):
        data = {}

    status = data.get("status")
    items = data.get("items")
    count = data.get("count")
    checks.append(("status_type", isinstance(status, str), "status is a string"))
    checks.append(("status_value", status in STATUSES, f"status is one of {', '.join(STATUSES)}"))
    checks.append(
        ("items_type", isinstance(items, list) and all(is_int(i) for i in items),
         "items is a list of integers")
    )
    checks.append(
        ("count", is_int(count) and isinstance(items, list) and count == len(items),
         "count is an integer equal to the number of items")
    )

    passed = [c for c in checks if c[1]]
    failed = [{"check": name, "expected": why} for name, ok, why in checks if not ok]
    for f in failed:
        print(f"{NAME}: failed {f['check']}: {f['expected']}", file=sys.stderr)

    result = {
        "name": NAME,
        "passed": not failed,
        "score": round(len(passed) / len(checks), 4),
        "evidence": f"{len(passed)} of {len(checks)} checks passed",
        "kind": "code",
        "metadata": {"file": "output.json", "checks": len(checks), "failed": failed},
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
