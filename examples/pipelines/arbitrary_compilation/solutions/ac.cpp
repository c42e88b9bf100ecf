// Correct: no main, only the function the tests' code calls.
long long add(long long a, long long b) { return a + b; }
