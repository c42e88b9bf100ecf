# Built-in strategy: manual valuation of the submission from the per-test points.
# pipelines.md, section 2.11 (Valuation).
# The spec shows two alternatives ("manually ... or with a call to an external program"); here
# the problem's `valuer` executable is used when the problem declares one, else the harmonic
# mean is computed here. Slip fixed: no tests gives 0 points (min() of an empty list).
submission.disable_autorate()

user = await compile(submission)

async def run_test(test):
    with test:
        output = File()
        await user(stdin=test.input, stdout=output)
        await checker(test.input, output, test.answer)

    if test.verdict is OK:
        return test.points
    elif isinstance(test.verdict, PT):
        return test.verdict.points
    else:
        return 0

test_points = await asyncio.gather(*map(run_test, tests))

if "valuer" not in executables:
    #
    # Manually:
    #
    if not test_points or min(test_points) == 0:
        points = 0
    else:
        # Harmonic mean
        points = len(test_points) / (sum(1 / x for x in test_points))

    submission.rate(PT(points))
else:
    #
    # ...or with a call to an external program:
    #
    f = File()
    f.write(f"{len(test_points)}\n".encode())
    for x in test_points:
        f.write(f"{x}\n".encode())

    await valuer(f)
