"""Checker for "Letters", called twice per test by the run_twice strategy.

    checker <input> <output> <answer> [> next input]

First call: <input> is the test's input ("encode" and N), <output> the first run's output (the
encoding). The encoding must be 1 to 20 lowercase letters; the checker writes the second run's
input to stdout: "decode" and the encoding (never N itself).

Second call: <input> is that second input (it starts with "decode"), <output> the second run's
output, which must be N (<answer>).

testlib exit codes: 0 OK, 1 WA, 2 PE, 3 CF (the checker's own failure); a message on stderr.
"""
import sys


def verdict(code, message):
    print(message, file=sys.stderr)
    sys.exit(code)


def main():
    _, input_path, output_path, answer_path = sys.argv[:4]
    with open(input_path) as f:
        mode = f.readline().strip()
    with open(output_path) as f:
        output = f.read().split()
    with open(answer_path) as f:
        answer = f.read().split()[0]

    if mode == "encode":
        if len(output) != 1:
            verdict(2, f"the encoding must be one word, found {len(output)}")
        word = output[0]
        if not (1 <= len(word) <= 20 and word.isascii() and word.isalpha() and word.islower()):
            verdict(2, f"the encoding must be 1 to 20 lowercase letters, found {word[:30]!r}")
        sys.stdout.write(f"decode\n{word}\n")
        verdict(0, f"encoded as {word}")
    elif mode == "decode":
        if len(output) != 1 or not output[0].isdigit():
            verdict(2, "the decoding must be one number")
        if output[0].lstrip("0") != answer.lstrip("0") or (output[0] != "0" and output[0].startswith("0")):
            verdict(1, f"decoded {output[0][:30]}, expected {answer}")
        verdict(0, f"decoded {answer}")
    else:
        verdict(3, f"unknown mode {mode!r} in {input_path}")


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except Exception as e:  # an uncaught exception would exit 1 (WA): make it CF
        verdict(3, f"checker failed: {e!r}")
