# The standard strategy with a typo: `test.answr` raises AttributeError on the first test
# (inside `with test`, which swallows only AbortedException).
user = await compile(submission)
for test in tests:
    with test:
        output = File()
        user(stdin=test.input, stdout=output)
        checker(test.input, output, test.answr)
