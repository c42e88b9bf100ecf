// Wrong on the third test: the sum goes through a 32-bit int.
long long add(long long a, long long b) { return (int)(a + b); }
