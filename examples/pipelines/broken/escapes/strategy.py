# The standard strategy, asking for 100 s, 8 GiB and 100 s of real time per run.
user = await compile(submission)
generous = Limits(time=100, memory=8 << 30, real_time=100)
for test in tests:
    with test:
        output = File()
        user(stdin=test.input, stdout=output, limits=generous)
        checker(test.input, output, test.answer)
