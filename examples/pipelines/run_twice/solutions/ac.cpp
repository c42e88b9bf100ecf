// Base 26 with the letters a..z: 0 is "a".
#include <algorithm>
#include <iostream>
#include <string>

int main() {
    std::string mode;
    std::cin >> mode;
    if (mode == "encode") {
        unsigned long long n;
        std::cin >> n;
        std::string word;
        do {
            word += char('a' + n % 26);
            n /= 26;
        } while (n);
        std::reverse(word.begin(), word.end());
        std::cout << word << "\n";
    } else {
        std::string word;
        std::cin >> word;
        unsigned long long n = 0;
        for (char c : word) n = n * 26 + (c - 'a');
        std::cout << n << "\n";
    }
}
