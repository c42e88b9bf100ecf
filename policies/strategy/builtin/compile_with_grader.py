# Built-in strategy: compile the submission with per-test code (test.code, testlib-style).
# pipelines.md, section 2.8 (Arbitrary compilation). The tasks are awaited by the runtime.
async def run_test(test):
    with test:
        output = File()
        user = await compile(submission, test.code, kind="testlib")
        user(stdin=test.input, stdout=output)
        checker(test.input, output, test.answer)

for test in tests:
    asyncio.create_task(run_test(test))
