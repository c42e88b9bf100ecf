#!/usr/bin/env bash
# A short tour of segi: starts a private segid, runs a few programs through segi-client,
# and stops the daemon again. Used by `make run`; needs `make build` first.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
segid="$repo/target/release/segid"
client="$repo/target/release/segi-client"
for bin in "$segid" "$client"; do
    if [[ ! -x $bin ]]; then
        echo "demo: $bin is missing; run 'make build' first" >&2
        exit 1
    fi
done

tmp=$(mktemp -d)
socket="$tmp/segid.sock"
daemon_pid=

cleanup() {
    local status=$?
    if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then
        kill -TERM "$daemon_pid" 2>/dev/null || true
        wait "$daemon_pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$segid" --socket "$socket" --policies "$repo/policies" --state-dir "$tmp/state" \
    2>"$tmp/segid.log" &
daemon_pid=$!

# Wait for the daemon to answer (10 s at most), and notice early if it died.
deadline=$((SECONDS + 10))
until "$client" --socket "$socket" ping >/dev/null 2>&1; do
    if ! kill -0 "$daemon_pid" 2>/dev/null; then
        echo "demo: segid exited during startup; its log:" >&2
        cat "$tmp/segid.log" >&2
        exit 1
    fi
    if ((SECONDS >= deadline)); then
        echo "demo: segid did not answer ping within 10 s; its log:" >&2
        cat "$tmp/segid.log" >&2
        exit 1
    fi
    sleep 0.1
done

# Prints a command line the way a person would type it (quotes only where needed).
show() {
    local word line=
    for word in "$@"; do
        if [[ $word =~ ^[A-Za-z0-9_./=:,+@%-]+$ ]]; then
            line+=" $word"
        else
            line+=" '${word//\'/\'\\\'\'}'"
        fi
    done
    printf '$%s\n' "$line"
}

# step EXPECTED HEADING ARGS...: prints HEADING, runs `segi-client ARGS`, and fails the demo
# only when the exit status is not the one the step is meant to show (EXPECTED is a number,
# or `nonzero` for "any failure").
step() {
    local expected=$1 heading=$2
    shift 2
    printf '\n=== %s\n' "$heading"
    show segi-client "$@"
    local status=0
    "$client" --socket "$socket" "$@" || status=$?
    if [[ $expected == nonzero ]]; then
        if [[ $status -eq 0 ]]; then
            echo "demo: expected a failure, but the step succeeded" >&2
            return 1
        fi
    elif [[ $status -ne $expected ]]; then
        echo "demo: expected exit status $expected, got $status" >&2
        return 1
    fi
}

step 0 "Is the daemon there?" ping
step 0 "What this host supports" capabilities
step 0 "A program in a fresh sandbox" run -- /bin/echo hello from the sandbox
# 137 = 128 + SIGKILL: the CPU limit ends the busy loop.
step 137 "A busy loop under a 1 s CPU limit: TLE, exit 137" \
    run --time 1 -- sh -c 'while :; do :; done'
# The sandbox's /etc is not the host's: cat must fail (it would be a hole if it printed).
step nonzero "The host's /etc/shadow is not visible in the sandbox" \
    run -- sh -c 'ls -l /etc/shadow; cat /etc/shadow'
# SEGI evaluations of the example problem (examples/sum): text as it comes, data events marked.
step 0 "An evaluation: a correct C submission to examples/sum" \
    evaluate --problem "$repo/examples/sum" --submission "source=$repo/examples/sum/submissions/correct.c" \
    -- python3 evaluator.py
step 0 "An evaluation: a wrong Python submission" \
    evaluate --problem "$repo/examples/sum" --submission "source=$repo/examples/sum/submissions/wrong.py" \
    -- python3 evaluator.py
# Judging: a problem package with a test case judge and a master judge (Sphere Engine's model).
step 0 "Judging: A+B in C, accepted" \
    judge --problem "$repo/examples/problems/sum" --submission "$repo/examples/problems/sum/solutions/ac.c"
step 1 "Judging: an interactive problem, a solution that runs out of guesses (exit 1: not AC)" \
    judge --problem "$repo/examples/problems/guess" --submission "$repo/examples/problems/guess/solutions/wa.py"
# A problem with a strategy (pipelines.md): the built-in standard one with a C++ testlib checker.
step 1 "A pipeline problem: the standard strategy, a solution that overflows on test 3 (exit 1)" \
    judge --problem "$repo/examples/pipelines/standard" --submission "$repo/examples/pipelines/standard/solutions/wa.py"

# Program graders on an agent's workspace; one grader fails on purpose (exit 1).
step 1 "Grading an agent's workspace with four program graders (one fails on purpose)" \
    grade --workspace "$repo/examples/graders/workspace" --config "$repo/examples/graders/graders.yaml" \
    --input "$repo/examples/graders/input.json"

printf '\n=== demo finished\n'
