"""The workspace's own checker, run as a program grader: `python3 -m my_checker`.

It lives at the workspace root because `-m` finds packages on sys.path, whose first entry is the
working directory, and a program grader runs with its working directory at the workspace root.
"""
