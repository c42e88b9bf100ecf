// Binary search: at most 30 guesses for N up to 10^9.
#include <iostream>
#include <string>

int main() {
    long long n;
    std::cin >> n;
    long long lo = 1, hi = n;
    while (lo <= hi) {
        long long mid = lo + (hi - lo) / 2;
        std::cout << mid << std::endl;  // endl flushes
        std::string reply;
        if (!(std::cin >> reply) || reply == "correct") return 0;
        if (reply == "higher") lo = mid + 1;
        else hi = mid - 1;
    }
}
