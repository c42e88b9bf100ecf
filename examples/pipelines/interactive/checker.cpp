// Checker for "Guess the number": checker <input> <interactor's result> <answer>.
// The interactor's result must read "found X in K guesses" with X the answer.
// testlib exit codes: 0 OK, 1 WA, 3 CF.
#include <cstdio>

int main(int argc, char **argv) {
    if (argc < 4) return 3;
    FILE *result = std::fopen(argv[2], "r");
    FILE *answer = std::fopen(argv[3], "r");
    long long expected, found;
    int guesses;
    if (!result || !answer || std::fscanf(answer, "%lld", &expected) != 1) {
        std::fprintf(stderr, "cannot read the result or the answer\n");
        return 3;
    }
    if (std::fscanf(result, "found %lld in %d guesses", &found, &guesses) != 2) {
        std::fprintf(stderr, "the interactor found nothing\n");
        return 1;
    }
    if (found != expected) {
        std::fprintf(stderr, "found %lld, expected %lld\n", found, expected);
        return 1;
    }
    std::fprintf(stderr, "%d guesses\n", guesses);
    return 0;
}
