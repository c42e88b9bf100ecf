# Built-in strategy: graders in several languages, compiled with the submission.
# pipelines.md, section 2.12 (Grading); uses a top-level `return`.
# The problem's grader files are taken from problem_files: grader.cpp and grader.h for C++,
# grader.py for Python (the spec's grader_cpp, grader_h, grader_python); a missing grader, or
# a submission of unknown type, is "not supported" (CE) rather than a failure of the strategy.
grader_cpp = problem_files.get("grader.cpp")
grader_h = problem_files.get("grader.h")
grader_python = problem_files.get("grader.py")

language = submission.type or Type("unknown")

if language.matches("cpp") and grader_cpp is not None and grader_h is not None:
    files = [submission, grader_cpp, grader_h]
elif language.matches("python^3") and grader_python is not None:
    files = [submission, grader_python]
else:
    submission.rate(CE, comment="Only C++ and Python programs are supported")
    return

user = await compile(*files, kind="testlib")

for test in tests:
    with test:
        output = File()
        user(stdin=test.input, stdout=output)
        checker(test.input, output, test.answer)
