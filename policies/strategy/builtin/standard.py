# Built-in strategy: a simple input/output problem.
# pipelines.md, section 2.3 (Strategy), first example.
user = await compile(submission)
for test in tests:
    with test:
        output = File()
        user(stdin=test.input, stdout=output)
        checker(test.input, output, test.answer)
