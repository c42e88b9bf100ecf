"""SEGI evaluator for the "sum" problem: read two integers a b, print a + b.

Runs as `python3 evaluator.py` in /problem (read-only: this directory). The submission is the
file named by SUBMISSION_FILE_SOURCE; its extension picks the language (.c compiled with gcc,
.py run with python3). Progress goes to stdout as text, results as data events framed by the
EVALUATION_DATA_BEGIN / EVALUATION_DATA_END markers, debugging to stderr (the log).
Exit status 0 means the evaluation went fine whatever the score; non-zero means the evaluator
itself failed. Optional: SUM_CASE_TIMEOUT, the wall-time limit per case in seconds (default 2).
"""
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

BEGIN = os.environ["EVALUATION_DATA_BEGIN"]
END = os.environ["EVALUATION_DATA_END"]
CASES_DIR = "cases"
OUTPUT_LIMIT = 1 << 20  # bytes of a submission's stdout kept; more is a wrong answer
COMPILE_TIMEOUT = 30  # seconds
# The submission and the compiler get a minimal environment: never the markers (a program that
# knew them could print its own data events, a score of 100 say) nor SUBMISSION_FILE_*.
CHILD_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "LANG": os.environ.get("LANG", "C.UTF-8"),
    "HOME": os.environ.get("HOME", "/tmp"),
}


def emit(*payloads):
    """Sends data events: a fresh line, BEGIN, one JSON value per line, END."""
    lines = [json.dumps(p, separators=(",", ":")) for p in payloads]
    sys.stdout.write("\n" + "\n".join([BEGIN, *lines, END]) + "\n")
    sys.stdout.flush()


def say(text):
    """A line of progress text for the user, sent at once."""
    print(text, flush=True)


def hide_markers():
    """Makes this process non-dumpable. The submission runs with our uid, so without this it
    could read the markers from /proc/<our pid>/environ (or /mem) even though its own
    environment lacks them. Best effort: the prctl is Linux-only."""
    try:
        if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE, 0
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")
    except (OSError, AttributeError) as e:
        print(f"warning: could not make the evaluator non-dumpable: {e}", file=sys.stderr)


def finish(correct, total, summary):
    emit({"type": "goal", "name": "correct", "outcome": total > 0 and correct == total},
         {"type": "score", "value": 100 * correct // total if total else 0})
    say(summary)


def compile_c(source, work):
    """Returns the command running the compiled program, or None after a compile error."""
    say(f"Compiling {os.path.basename(source)}...")
    binary = os.path.join(work, "solution")
    cmd = ["gcc", "-O2", "-std=c11", "-o", binary, source, "-lm"]
    env = dict(CHILD_ENV, TMPDIR=os.environ.get("TMPDIR", "/tmp"))
    try:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, env=env,
                              cwd=work, timeout=COMPILE_TIMEOUT)
        message, ok = done.stderr.decode(errors="replace"), done.returncode == 0
    except subprocess.TimeoutExpired:
        message, ok = f"compilation took more than {COMPILE_TIMEOUT} s", False
    if ok:
        if message:  # warnings: useful when debugging, not part of the verdict, so the log
            print(message, file=sys.stderr, end="")
        emit({"type": "compilation", "outcome": "success"})
        return [binary]
    # The compiler's errors are the user's feedback, not our debugging: stdout, as text.
    say("Compilation failed:\n" + message.rstrip("\n"))
    emit({"type": "compilation", "outcome": "error", "message": message[:4000]})
    return None


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the program and anything it started
    except ProcessLookupError:
        pass


def run_case(cmd, input_path, work, timeout):
    """Runs one case: (outcome, detail, stdout, seconds)."""
    with open(input_path, "rb") as stdin:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL,  # unbounded, and not ours to show
                                cwd=work, env=CHILD_ENV, start_new_session=True)
    out = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read(OUTPUT_LIMIT + 1)))
    reader.start()
    reader.join(timeout)  # the output is complete once every writer has closed it
    timed_out = reader.is_alive()
    if not timed_out and len(out[0]) <= OUTPUT_LIMIT:
        try:
            proc.wait(max(0.0, start + timeout - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    elapsed = time.monotonic() - start
    kill_group(proc)
    proc.wait()
    reader.join()
    proc.stdout.close()
    if timed_out:
        return "time_limit", "time limit exceeded", b"", elapsed
    if len(out[0]) > OUTPUT_LIMIT:
        return "wrong_answer", "wrong answer (output over 1 MiB)", b"", elapsed
    if proc.returncode < 0:
        return "runtime_error", f"runtime error (signal {-proc.returncode})", b"", elapsed
    if proc.returncode > 0:
        return "runtime_error", f"runtime error (exit {proc.returncode})", b"", elapsed
    return None, None, out[0], elapsed


def main():
    timeout = float(os.environ.get("SUM_CASE_TIMEOUT", "2"))
    names = sorted(f[:-3] for f in os.listdir(CASES_DIR) if f.endswith(".in"))
    missing = [n + ".out" for n in names if not os.path.isfile(f"{CASES_DIR}/{n}.out")]
    if not names or missing:
        print(f"cases missing in {os.path.abspath(CASES_DIR)}: {missing or '*.in'}",
              file=sys.stderr)
        return 1
    hide_markers()
    source = os.environ["SUBMISSION_FILE_SOURCE"]
    extension = os.path.splitext(source)[1]
    if extension not in (".c", ".py"):
        say(f"Unsupported language: {os.path.basename(source)!r} should end in .c or .py.")
        emit({"type": "compilation", "outcome": "unsupported_language", "extension": extension})
        finish(0, len(names), "Score: 0/100 (unsupported language)")
        return 0
    work = tempfile.mkdtemp(prefix="sum-")  # under TMPDIR: /problem is read-only
    try:
        if extension == ".c":
            cmd = compile_c(source, work)
        else:
            say(f"Running {os.path.basename(source)} with python3.")
            cmd = ["python3", source]
        if cmd is None:
            finish(0, len(names), "Score: 0/100 (compilation error)")
            return 0
        correct = 0
        for name in names:
            with open(os.path.join(CASES_DIR, name + ".out"), "rb") as f:
                expected = f.read().split()
            outcome, detail, output, seconds = run_case(
                cmd, os.path.join(CASES_DIR, name + ".in"), work, timeout)
            if outcome is None:
                ok = output.split() == expected  # tokens: whitespace does not matter
                outcome, detail = ("correct", "correct") if ok else ("wrong_answer", "wrong answer")
            correct += outcome == "correct"
            say(f"case {name}: {detail} ({seconds:.2f} s)")
            emit({"type": "testcase", "case": name, "outcome": outcome,
                  "time": round(seconds, 3)})
        finish(correct, len(names),
               f"Score: {100 * correct // len(names)}/100 ({correct}/{len(names)} cases correct)")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
