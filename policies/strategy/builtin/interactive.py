# Built-in strategy: an interactive problem (user and interactor joined by two pipes).
# pipelines.md, section 2.5 (Pipes).
user = await compile(submission)
for test in tests:
    with test:
        interactor_output = File()
        i2u, u2i = Pipe(), Pipe()
        user(stdin=i2u, stdout=u2i)
        interactor(test.input, interactor_output.rw(), test.answer, stdin=u2i, stdout=i2u)
        checker(test.input, interactor_output, test.answer)
