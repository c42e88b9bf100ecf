# pipelines.md 2.6 (Custom file names), as the spec writes it.
user = await compile(submission)

for test in tests:
    with test:
        output = File()
        user(stdin=test.input, stdout=output, files={"input.txt": test.input, "output.txt": output.rw()})
        checker(test.input, output, test.answer)
