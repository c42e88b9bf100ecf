# Built-in strategy: a run-twice problem (the checker's stdout is the second run's input).
# pipelines.md, section 2.3 (Strategy), second example.
user = await compile(submission)
for test in tests:
    with test:
        run1_output, run2_input, run2_output = File(), File(), File()
        user(stdin=test.input, stdout=run1_output)
        checker(test.input, run1_output, test.answer, stdout=run2_input)
        user(stdin=run2_input, stdout=run2_output)
        checker(run2_input, run2_output, test.answer)
