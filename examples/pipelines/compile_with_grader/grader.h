// The function a C++ submission implements.
#pragma once
#include <vector>

long long sum_of(const std::vector<long long> &numbers);
