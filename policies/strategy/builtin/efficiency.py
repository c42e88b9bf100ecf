# Built-in strategy: efficiency-rated problem (points scale with the CPU time used).
# pipelines.md, section 2.9 (Efficiency-rated problems).
# Slips fixed: the spec's undefined `output` is a new `File()` per test; a run that used no
# measurable CPU time (0 s) gets full points instead of a ZeroDivisionError.
user = await compile(submission)

async def run_test(test):
    with test:
        output = File()
        result = await user(stdin=test.input, stdout=output)
        await checker(test.input, output, test.answer)
        time = result.metrics.time
        test.rate(PT(test.points * (min(1, 0.1 / time) if time else 1)))

for test in tests:
    asyncio.create_task(run_test(test))
