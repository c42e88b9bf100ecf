// Interactor for "Guess the number": interactor <input> <result file, read-write> <answer>.
// The test's input is "N X": the hidden number X is in 1..N. The interactor sends N on its
// stdout (the submission's stdin), then answers each guess read on its stdin (the submission's
// stdout) with "higher", "lower" or "correct". At most 30 guesses.
// It writes "found X in K guesses" (or why it stopped) to its result file.
// testlib exit codes: 0 OK, 1 WA (too many guesses, a bad guess, the submission stopped),
// 3 CF (its own failure).
#include <csignal>
#include <cstdio>

static const int MAX_GUESSES = 30;

int main(int argc, char **argv) {
    std::signal(SIGPIPE, SIG_IGN);  // the submission may be gone: that is its fault, not ours
    if (argc < 4) {
        std::fprintf(stderr, "usage: interactor input result answer\n");
        return 3;
    }
    FILE *in = std::fopen(argv[1], "r");
    FILE *result = std::fopen(argv[2], "w");
    if (!in || !result) {
        std::fprintf(stderr, "cannot open the input or the result file\n");
        return 3;
    }
    long long n, x;
    if (std::fscanf(in, "%lld %lld", &n, &x) != 2) {
        std::fprintf(stderr, "bad test input\n");
        return 3;
    }
    std::printf("%lld\n", n);
    std::fflush(stdout);
    for (int k = 1; k <= MAX_GUESSES; k++) {
        long long guess;
        if (std::scanf("%lld", &guess) != 1) {
            std::fprintf(result, "no guess %d\n", k);
            std::fprintf(stderr, "the submission stopped before guessing (guess %d)\n", k);
            return 1;
        }
        if (guess < 1 || guess > n) {
            std::fprintf(result, "bad guess %lld\n", guess);
            std::fprintf(stderr, "guess %lld is out of 1..%lld\n", guess, n);
            return 1;
        }
        if (guess == x) {
            std::printf("correct\n");
            std::fflush(stdout);
            std::fprintf(result, "found %lld in %d guesses\n", x, k);
            std::fprintf(stderr, "found %lld in %d guesses\n", x, k);
            return 0;
        }
        std::printf(guess < x ? "higher\n" : "lower\n");
        std::fflush(stdout);
    }
    std::fprintf(result, "not found in %d guesses\n", MAX_GUESSES);
    std::fprintf(stderr, "not found in %d guesses\n", MAX_GUESSES);
    return 1;
}
