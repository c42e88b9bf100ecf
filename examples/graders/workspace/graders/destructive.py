#!/usr/bin/env python3
"""Program grader (JSON mode) that deletes everything under $EVALUATE_WORKSPACE, then passes.

For tests of isolation: each grader gets its own private copy-on-write view of the workspace, so
this must not affect other graders (even ones running at the same time) or the original directory.
Do not run it by hand on a directory you care about.
"""

import json
import os
import shutil
import sys

NAME = "destructive"


def main():
    root = os.environ.get("EVALUATE_WORKSPACE")
    if not root:
        print(f"{NAME}: EVALUATE_WORKSPACE is not set; refusing", file=sys.stderr)
        sys.exit(2)
    real = os.path.realpath(root)
    if real in ("/", os.path.realpath(os.path.expanduser("~"))):
        print(f"{NAME}: refusing to empty {real}", file=sys.stderr)
        sys.exit(2)

    removed, errors = [], []
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
            removed.append(entry)
        except OSError as e:
            errors.append(f"{entry}: {e}")
            print(f"{NAME}: cannot remove {path}: {e}", file=sys.stderr)
    left = sorted(os.listdir(root))
    print(f"{NAME}: removed {len(removed)} entries, {len(left)} left", file=sys.stderr)

    # No "name": it is left to the grader's config (destructive, destructive-again).
    print(json.dumps({
        "passed": True,
        "score": 1.0,
        "evidence": f"removed {len(removed)} entries from the workspace; {len(left)} left",
        "kind": "code",
        "metadata": {"removed": removed, "left": left, "errors": errors},
    }))


if __name__ == "__main__":
    main()
