"""Interactive test case judge of "guess" (Python 3, standard library only).

Streams (file descriptors only, never file names):
  0  the test input: "N SECRET" (1 <= SECRET <= N)
  3  the program's stdout: one guess per line
  8  the program's stdin: first "N", then one answer per guess: "<", ">" or "="
  6  debug, for the problem setter    7  a short note the user sees
Exit 0 = AC (found within ceil(log2 N) + 1 guesses), 1 = WA, 2 = a broken test (IE).

The judge never waits on anything but the program's output, and stops at its end (EOF), so it
cannot hang on a program that exits. If both wait on each other (the program never answers), the
program's wall time limit ends the test: TLE. Exiting closes fd 8: the program then reads EOF.
"""
import os
import sys

AC, WA, IE = 0, 1, 2
MAX_LINE = 100  # bytes: a guess is a short number; a longer line is garbage


def log(msg):
    """Debug on fd 6 (silently nothing where fd 6 is not open, e.g. run by hand)."""
    try:
        os.write(6, (msg + "\n").encode())
    except OSError:
        pass


def finish(code, note):
    """The verdict, with a note for the user on fd 7."""
    try:
        os.write(7, (note + "\n").encode())
    except OSError:
        pass
    log("verdict: " + ("AC" if code == AC else "WA") + ": " + note)
    sys.exit(code)


def send(text):
    """Writes to the program's stdin, unbuffered: each answer reaches it at once."""
    data = (text + "\n").encode()
    try:
        while data:
            data = data[os.write(8, data):]
    except BrokenPipeError:  # the program closed its stdin or died
        finish(WA, "the program stopped reading its input")


def main():
    try:
        n, secret = map(int, sys.stdin.read().split())
        assert 1 <= secret <= n
    except (ValueError, AssertionError):
        log("bad test input: expected N SECRET with 1 <= SECRET <= N")
        sys.exit(IE)
    limit = (n - 1).bit_length() + 1  # ceil(log2 N) + 1, exact in integers
    log(f"N={n} secret={secret} limit={limit}")

    program = open(3, "rb", closefd=False)
    send(str(n))
    for count in range(1, limit + 1):
        line = program.readline(MAX_LINE + 1)
        if not line:
            finish(WA, f"the program's output ended after {count - 1} guesses")
        if len(line) > MAX_LINE:
            finish(WA, f"guess {count} is not a number: {line[:40]!r}...")
        try:
            guess = int(line.decode("ascii").strip())
        except (UnicodeDecodeError, ValueError):
            finish(WA, f"guess {count} is not a number: {line[:40]!r}")
        log(f"guess {count}: {guess}")
        if not 1 <= guess <= n:
            finish(WA, f"guess {count} is out of range 1..{n}: {guess}")
        if guess == secret:
            send("=")
            finish(AC, f"found in {count} guess{'es' if count > 1 else ''} (limit {limit})")
        send("<" if secret < guess else ">")
    finish(WA, f"not found in {limit} guesses")


main()
