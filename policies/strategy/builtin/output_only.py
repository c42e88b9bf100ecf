# Built-in strategy: an output-only problem (the submission is a ZIP of NN.out files).
# pipelines.md, section 2.7 (Archives).
# Slips fixed: the spec's undefined `answer` is `test.answer`; a submission that is not a ZIP
# archive is treated as an empty archive (every test PE "File is missing") instead of failing
# the strategy (CF).
try:
    user = submission.into_archive()
except ArchiveError:
    user = {}
for test in tests:
    with test:
        try:
            checker(test.input, user[f"{test.no:02}.out"], test.answer)
        except KeyError:
            test.rate(PE, "File is missing")
