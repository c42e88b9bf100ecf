# Built-in strategy: a raw submission (a data file judged by the checker, nothing compiled).
# pipelines.md, section 2.10 (Raw submissions).
for test in tests:
    with test:
        checker(test.input, submission, test.answer)
