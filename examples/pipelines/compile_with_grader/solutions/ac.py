def sum_of(numbers):
    return sum(numbers)


import grader  # noqa: E402,F401 - runs the test (see the problem's README)
