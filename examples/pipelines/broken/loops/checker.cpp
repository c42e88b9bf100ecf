// A testlib-style checker for A+B: checker <input> <output> <answer>.
// Exit 0 = OK, 1 = WA, 2 = PE (the output holds no number); the message goes to stderr.
#include <cstdio>
#include <cstdlib>

static FILE *open_or_die(const char *path) {
    FILE *f = std::fopen(path, "r");
    if (!f) {
        std::fprintf(stderr, "cannot open %s\n", path);
        std::exit(3);  // CF: the checker itself failed
    }
    return f;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: checker input output answer\n");
        return 3;
    }
    FILE *out = open_or_die(argv[2]);
    FILE *ans = open_or_die(argv[3]);
    long long expected, got;
    if (std::fscanf(ans, "%lld", &expected) != 1) {
        std::fprintf(stderr, "the answer file holds no number\n");
        return 3;
    }
    if (std::fscanf(out, "%lld", &got) != 1) {
        std::fprintf(stderr, "the output holds no number\n");
        return 2;
    }
    char extra;
    if (std::fscanf(out, " %c", &extra) == 1) {
        std::fprintf(stderr, "extra output after the number\n");
        return 2;
    }
    if (got != expected) {
        std::fprintf(stderr, "expected %lld, found %lld\n", expected, got);
        return 1;
    }
    std::fprintf(stderr, "ok %lld\n", got);
    return 0;
}
