# Compiles the submission, then spins forever before judging anything.
user = await compile(submission)
n = 0
while True:
    n += 1
