// Defines its own main(): the link with grader.cpp fails (CE).
#include <iostream>
#include "grader.h"

long long sum_of(const std::vector<long long> &numbers) {
    long long sum = 0;
    for (long long x : numbers) sum += x;
    return sum;
}

int main() { std::cout << 0 << std::endl; }
