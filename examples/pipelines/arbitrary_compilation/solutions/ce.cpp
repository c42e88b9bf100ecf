// Does not define add: linking with the tests' code fails, CE on every test.
long long plus(long long a, long long b) { return a + b; }
