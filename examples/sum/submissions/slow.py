# Never answers: every case ends in time_limit.
while True:
    pass
