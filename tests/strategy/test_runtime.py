"""Tests of segi's strategy runtime (policies/strategy) against a fake daemon.

Run from the repository root: ``python3 -m unittest tests/strategy/test_runtime.py``.

Each test runs ``python3 -I run.py`` in a temporary directory holding copies of
``segi_strategy.py``, ``run.py`` and a ``strategy.py``, with a request pipe on its fd 3 and a
response pipe on its fd 4, exactly as the daemon does. The fake daemon (a thread here) answers
the hello and every request (compile -> ``e1``, ``e2``, ...; invoke -> a result the test
chooses), keeps written files, and records the requests in order.
"""

import base64
import fcntl
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STRATEGY_DIR = os.path.join(ROOT, "policies", "strategy")
BUILTIN_DIR = os.path.join(STRATEGY_DIR, "builtin")
sys.path.insert(0, STRATEGY_DIR)
sys.dont_write_bytecode = True  # no __pycache__ in policies/strategy

import segi_strategy  # noqa: E402

TIMEOUT = 20

def builtin(name):
    with open(os.path.join(BUILTIN_DIR, name), encoding="utf-8") as f:
        return f.read()


def ok_result(**over):
    result = {"exit_code": 0, "signal": None, "verdict": "OK", "comment": "", "points": None,
              "metrics": {"time": 0.01, "memory": 1 << 20, "real_time": 0.02},
              "failed": False, "aborted": False}
    result.update(over)
    return result


def make_hello(ntests=2, submission_type="cpp", extra_files=None, points=1.0, groups=None,
               problem_files=("grader.cpp", "grader.h", "grader.py"), executables=None):
    tests = []
    for no in range(1, ntests + 1):
        files = {"input": f"test/{no}/input", "answer": f"test/{no}/answer"}
        for key in extra_files or ():
            files[key] = f"test/{no}/{key}"
        tests.append({"no": no, "group": (groups or {}).get(no), "points": points, "files": files})
    group_names = sorted({g for g in (groups or {}).values()})
    return {
        "tests": tests,
        "groups": {g: {"points_policy": "complete-group", "feedback_policy": "complete",
                       "dependencies": []} for g in group_names},
        "executables": executables or {"checker": {"kind": "testlib"},
                                       "interactor": {"kind": "testlib"}},
        "submission": {"type": submission_type, "filename": "main.cpp", "id": "s1", "timestamp": 0},
        "problem_files": list(problem_files),
        "limits": {"user": {"time": 1, "memory": 268435456, "real_time": 3}},
    }


class FakeDaemon:
    """Answers one runtime's requests. ``on_invoke(req)``/``on_compile(req)`` may return an
    answer (merged over the default); ``files`` holds the contents of files by handle. With
    ``hold_invokes=K`` the invoke answers are held back until K are pending, or a ``read``
    request arrives, and then sent in reverse order (responses may come in any order)."""

    def __init__(self, hello, on_invoke=None, on_compile=None, files=None, hold_invokes=0):
        self.hello = hello
        self.on_invoke = on_invoke
        self.on_compile = on_compile
        self.files = dict(files or {})
        self.hold_invokes = hold_invokes
        self.held = []
        self.requests = []
        self.exes = 0
        self.errors = []

    def answer(self, req):
        op = req.get("op")
        if op == "hello":
            return dict(self.hello)
        if op == "write":
            self.files[req["file"]] = self.files.get(req["file"], b"") + base64.b64decode(req["data"])
            return {}
        if op == "read":
            return {"data": base64.b64encode(self.files.get(req["file"], b"")).decode()}
        if op == "compile":
            custom = self.on_compile(req) if self.on_compile else None
            if custom is not None:
                return custom
            self.exes += 1
            return {"executable": f"e{self.exes}"}
        if op == "invoke":
            custom = self.on_invoke(req) if self.on_invoke else None
            return ok_result(**(custom or {}))
        if op in ("rate", "log", "disable_autorate"):
            return {}
        return {"error": f"unknown op {op!r}"}

    def serve(self, req_r, resp_w):
        with os.fdopen(req_r, "rb") as requests, os.fdopen(resp_w, "wb", buffering=0) as responses:
            for line in requests:
                try:
                    req = json.loads(line)
                except ValueError as e:
                    self.errors.append(f"bad request line {line!r}: {e}")
                    continue
                self.requests.append(req)
                resp = self.answer(req)
                resp["id"] = req.get("id")
                out = []
                if self.hold_invokes and req.get("op") == "invoke":
                    self.held.append(resp)
                    if len(self.held) < self.hold_invokes:
                        continue
                    resp = None
                if self.held and (resp is None or req.get("op") == "read"):
                    out, self.held = self.held[::-1], []
                if resp is not None:
                    out.append(resp)
                try:
                    responses.write("".join(json.dumps(r) + "\n" for r in out).encode())
                except BrokenPipeError:
                    break

    # helpers for assertions
    def ops(self, op):
        return [r for r in self.requests if r["op"] == op]

    def logs(self):
        return [r["message"] for r in self.ops("log")]


def spawn_with_fds(argv, cwd, fds):
    """Popen with ``fds`` ({child fd: our fd}) at those numbers in the child (pass_fds).

    Whatever this process has at those numbers is moved aside for the Popen and put back."""
    saved = {}
    for target in fds:
        try:
            saved[target] = (fcntl.fcntl(target, fcntl.F_DUPFD_CLOEXEC, 10), os.get_inheritable(target))
        except OSError:
            saved[target] = None
    sources = {target: fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for target, fd in fds.items()}
    try:
        for target, fd in sources.items():
            os.dup2(fd, target, inheritable=False)
        return subprocess.Popen(argv, cwd=cwd, pass_fds=tuple(fds), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finally:
        for target, old in saved.items():
            if old is None:
                os.close(target)
            else:
                os.dup2(old[0], target, inheritable=old[1])
                os.close(old[0])
        for fd in sources.values():
            os.close(fd)


def run_strategy(source, daemon):
    """Run ``source`` as strategy.py against ``daemon``; returns (exit status, stderr)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("segi_strategy.py", "run.py"):
            shutil.copy(os.path.join(STRATEGY_DIR, name), tmp)
        with open(os.path.join(tmp, "strategy.py"), "w", encoding="utf-8") as f:
            f.write(source)
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        try:
            proc = spawn_with_fds([sys.executable, "-I", "run.py"], tmp, {3: req_w, 4: resp_r})
        finally:
            os.close(req_w)
            os.close(resp_r)
        server = threading.Thread(target=daemon.serve, args=(req_r, resp_w), daemon=True)
        server.start()
        try:
            _, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            raise AssertionError(f"the strategy hung; stderr:\n{err.decode()}")
        server.join(TIMEOUT)
        if daemon.errors:
            raise AssertionError(f"the runtime sent bad requests: {daemon.errors}")
        return proc.returncode, err.decode()


class RuntimeTest(unittest.TestCase):
    def run_ok(self, source, daemon):
        status, err = run_strategy(source, daemon)
        self.assertEqual(status, 0, f"strategy failed; stderr:\n{err}")
        self.assertEqual(daemon.requests[0], {"id": 0, "op": "hello"})
        ids = [r["id"] for r in daemon.requests]
        self.assertEqual(ids, list(range(len(ids))), "ids are 0, 1, 2, ... in request order")
        return err

    # ---- 2.3
    def test_standard_strategy(self):
        d = FakeDaemon(make_hello(ntests=2))
        self.run_ok(builtin("standard.py"), d)
        ops = [r["op"] for r in d.requests]
        self.assertEqual(ops, ["hello", "compile", "invoke", "invoke", "invoke", "invoke"])
        self.assertEqual(d.requests[1], {"id": 1, "op": "compile", "sources": ["submission"],
                                         "kind": "user", "test": None})
        invokes = d.ops("invoke")
        outputs = set()
        for no, (user, checker) in enumerate(zip(invokes[::2], invokes[1::2]), start=1):
            self.assertEqual(user["exe"], "e1")
            self.assertEqual(user["kind"], "user")
            self.assertEqual(user["test"], no)
            self.assertEqual(user["argv"], [])
            self.assertEqual(user["stdin"], {"file": f"test/{no}/input"})
            out = user["stdout"]["file"]
            self.assertRegex(out, r"^f\d+$")
            outputs.add(out)
            self.assertIsNone(user["stderr"])
            self.assertEqual(user["files"], {})
            self.assertIsNone(user["limits"])
            # the checker comes after the writer of the file it reads (the daemon orders them)
            self.assertEqual(checker["exe"], "checker")
            self.assertEqual(checker["kind"], "testlib")
            self.assertEqual(checker["test"], no)
            self.assertEqual(checker["argv"], [
                {"file": f"test/{no}/input", "rw": False},
                {"file": out, "rw": False},
                {"file": f"test/{no}/answer", "rw": False},
            ])
            self.assertLess(user["id"], checker["id"])
        self.assertEqual(len(outputs), 2, "a new output file per test")

    def test_answers_out_of_order(self):
        d = FakeDaemon(make_hello(ntests=2), hold_invokes=4)
        self.run_ok(builtin("standard.py"), d)
        self.assertEqual(len(d.ops("invoke")), 4)
        self.assertFalse(d.held)

        times = {1: 0.2, 2: 0.4}
        d = FakeDaemon(make_hello(ntests=2, points=1.0), hold_invokes=2,
                       on_invoke=lambda req: {"metrics": {"time": times[req["test"]]}}
                       if req["exe"] == "e1" else None)
        self.run_ok(builtin("efficiency.py"), d)
        rates = sorted((r["test"], r["points"]) for r in d.ops("rate"))
        self.assertEqual(rates, [(1, 0.5), (2, 0.25)])

    def test_sync_round_trip_with_pending_invocations(self):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("a.txt", "A")
        d = FakeDaemon(make_hello(ntests=1), files={"submission": buf.getvalue()}, hold_invokes=99,
                       on_invoke=lambda req: {"exit_code": 3, "metrics": {"time": 0.5}})
        self.run_ok("user = await compile(submission)\n"
                    "inv = user(stdin=tests[0].input)\n"
                    "archive = submission.into_archive()\n"
                    "log(inv.done(), sorted(archive), 'a.txt' in archive, archive.get('b') is None)\n"
                    "r = await inv\n"
                    "log(r.exit_code, r.metrics.time, r.verdict is OK)\n", d)
        self.assertEqual(d.logs(), ["True ['a.txt'] True True", "3 0.5 True"])

    def test_invocation_as_task(self):
        d = FakeDaemon(make_hello(ntests=1), hold_invokes=2,
                       on_invoke=lambda req: {"exit_code": req["id"]})
        self.run_ok("user = await compile(submission)\n"
                    "with tests[0]:\n"
                    "    t = asyncio.create_task(user(stdin=tests[0].input))\n"
                    "    a, b = await asyncio.gather(user('x'), t)\n"
                    "log(a.exit_code, b.exit_code, len(tests[0].metrics))\n", d)
        first, second = d.ops("invoke")
        self.assertEqual(first["stdin"], {"file": "test/1/input"})
        self.assertEqual(first["test"], 1)
        self.assertEqual(d.logs(), [f"{second['id']} {first['id']} 2"])

    def test_gathered_task_exception_is_handled(self):
        d = FakeDaemon(make_hello(ntests=1))
        self.run_ok("async def f():\n    raise KeyError('x')\n"
                    "r = await asyncio.gather(f(), return_exceptions=True)\n"
                    "t = asyncio.create_task(f())\n"
                    "try:\n    await t\nexcept KeyError:\n    log('caught')\n", d)
        self.assertEqual(d.logs(), ["caught"])

    def test_run_twice(self):
        d = FakeDaemon(make_hello(ntests=1))
        self.run_ok(builtin("run_twice.py"), d)
        u1, c1, u2, c2 = d.ops("invoke")
        self.assertEqual(c1["stdout"], u2["stdin"])
        self.assertEqual(c1["argv"][1]["file"], u1["stdout"]["file"])
        self.assertEqual(c2["argv"][0]["file"], u2["stdin"]["file"])
        self.assertEqual(c2["argv"][1]["file"], u2["stdout"]["file"])

    # ---- 2.5, 2.6
    def test_interactive_pipes(self):
        d = FakeDaemon(make_hello(ntests=1))
        self.run_ok(builtin("interactive.py"), d)
        user, interactor, checker = d.ops("invoke")
        i2u, u2i = user["stdin"]["pipe"], user["stdout"]["pipe"]
        self.assertNotEqual(i2u, u2i)
        self.assertEqual(interactor["exe"], "interactor")
        self.assertEqual(interactor["stdin"], {"pipe": u2i})
        self.assertEqual(interactor["stdout"], {"pipe": i2u})
        out = interactor["argv"][1]
        self.assertTrue(out["rw"])
        self.assertEqual(checker["argv"][1], {"file": out["file"], "rw": False})

    def test_file_io_and_limits(self):
        d = FakeDaemon(make_hello(ntests=1))
        self.run_ok(builtin("file_io.py"), d)
        user = d.ops("invoke")[0]
        out = user["stdout"]["file"]
        self.assertEqual(user["files"], {"input.txt": {"file": "test/1/input", "rw": False},
                                         "output.txt": {"file": out, "rw": True}})
        d = FakeDaemon(make_hello(ntests=1))
        self.run_ok("user = await compile(submission)\n"
                    "p = Pipe()\n"
                    "user('x', b'y', p.as_writable(), limits=Limits(time=2, memory=1024))\n", d)
        inv = d.ops("invoke")[0]
        self.assertEqual(inv["argv"], [{"str": "x"}, {"str": "y"}, {"pipe": "p1", "write": True}])
        self.assertEqual(inv["limits"], {"time": 2, "memory": 1024})
        self.assertIsNone(inv["test"])

    # ---- AbortedException
    def test_with_test_swallows_aborted(self):
        def on_invoke(req):
            if req["exe"] == "e1" and req["test"] == 1:
                return {"failed": True, "verdict": "TLE", "comment": "time limit", "exit_code": None,
                        "signal": 9}
            return None

        d = FakeDaemon(make_hello(ntests=2), on_invoke=on_invoke)
        self.run_ok(
            "user = await compile(submission)\n"
            "for test in tests:\n"
            "    with test:\n"
            "        out = File()\n"
            "        await user(stdin=test.input, stdout=out)\n"
            "        log('after', test.no)\n"
            "        checker(test.input, out, test.answer)\n"
            "for test in tests:\n"
            "    log(test.no, test.verdict, test.comment, test.verdict is TLE, len(test.metrics))\n"
            "log('done')\n", d)
        self.assertEqual(d.logs(), ["after 2", "1 TLE time limit True 1", "2 OK None False 1", "done"])
        invokes = d.ops("invoke")
        self.assertEqual([(r["exe"], r["test"]) for r in invokes], [("e1", 1), ("e1", 2), ("checker", 2)])

    def test_compile_failure(self):
        d = FakeDaemon(make_hello(ntests=2),
                       on_compile=lambda req: {"failed": True, "verdict": "CE", "comment": "error: x"})
        err = self.run_ok(builtin("standard.py"), d)
        self.assertEqual([r["op"] for r in d.requests], ["hello", "compile"])
        self.assertIn("compilation failed", err)

    # ---- 2.7
    def test_output_only_archive(self):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("01.out", "3\n")
            z.writestr("03.out", "ignored\n")
        d = FakeDaemon(make_hello(ntests=2), files={"submission": buf.getvalue()})
        self.run_ok(builtin("output_only.py"), d)
        ops = [r["op"] for r in d.requests]
        self.assertEqual(ops, ["hello", "read", "write", "invoke", "rate"])
        self.assertEqual(d.requests[1]["file"], "submission")
        write, checker, rate = d.requests[2:]
        self.assertEqual(base64.b64decode(write["data"]), b"3\n")
        self.assertEqual(checker["argv"], [{"file": "test/1/input", "rw": False},
                                           {"file": write["file"], "rw": False},
                                           {"file": "test/1/answer", "rw": False}])
        self.assertEqual(checker["test"], 1)
        self.assertEqual(rate, {"id": rate["id"], "op": "rate", "test": 2, "verdict": "PE",
                                "points": None, "comment": "File is missing"})

    def test_output_only_not_a_zip(self):
        d = FakeDaemon(make_hello(ntests=2), files={"submission": b"not a zip"})
        self.run_ok(builtin("output_only.py"), d)
        self.assertEqual([(r["test"], r["verdict"]) for r in d.ops("rate")], [(1, "PE"), (2, "PE")])

    # ---- rate / 2.9
    def test_rate_partial(self):
        d = FakeDaemon(make_hello(ntests=1))
        self.run_ok("for test in tests:\n"
                    "    with test:\n"
                    "        test.rate(PT(0.5))\n"
                    "        log(isinstance(test.verdict, PT), test.verdict.points)\n", d)
        rate = d.ops("rate")[0]
        self.assertEqual(rate, {"id": rate["id"], "op": "rate", "test": 1, "verdict": "PT",
                                "points": 0.5, "comment": None})
        self.assertEqual(d.logs(), ["True 0.5"])

    def test_efficiency(self):
        def on_invoke(req):
            if req["exe"] == "e1":
                return {"metrics": {"time": 0.2, "memory": 1, "real_time": 0.3}}
            return None

        d = FakeDaemon(make_hello(ntests=2, points=1.0), on_invoke=on_invoke)
        self.run_ok(builtin("efficiency.py"), d)
        rates = sorted((r["test"], r["verdict"], r["points"]) for r in d.ops("rate"))
        self.assertEqual(rates, [(1, "PT", 0.5), (2, "PT", 0.5)])
        for inv in d.ops("invoke"):
            if inv["exe"] == "e1":
                self.assertRegex(inv["stdout"]["file"], r"^f\d+$")

    # ---- 2.8: tasks awaited at the end
    def test_create_task_awaited(self):
        def on_compile(req):
            if req["test"] == 1:
                return {"failed": True, "verdict": "CE", "comment": "bad"}
            return None

        d = FakeDaemon(make_hello(ntests=3, extra_files=["code"]), on_compile=on_compile)
        self.run_ok(builtin("compile_with_grader.py") +
                    "\nasync def late():\n"
                    "    while tests[0].verdict is None:\n"
                    "        await asyncio.sleep(0.01)\n"
                    "    log('late', tests[0].verdict)\n"
                    "asyncio.create_task(late())\n", d)
        compiles = d.ops("compile")
        self.assertEqual(sorted(r["test"] for r in compiles), [1, 2, 3])
        for r in compiles:
            self.assertEqual(r["sources"], ["submission", f"test/{r['test']}/code"])
            self.assertEqual(r["kind"], "testlib")
        invokes = d.ops("invoke")
        self.assertEqual(sorted((r["test"], r["exe"] == "checker") for r in invokes),
                         [(2, False), (2, True), (3, False), (3, True)])
        for r in invokes:
            if r["exe"] != "checker":
                self.assertEqual(r["kind"], "testlib")
        self.assertEqual(d.logs(), ["late CE"])

    # ---- 2.11
    def test_valuer_manual_and_external(self):
        def on_invoke(req):
            if req["exe"] == "checker" and req["test"] == 2:
                return {"verdict": "PT", "points": 0.5}
            return None

        hello = make_hello(ntests=2, points=1.0)
        d = FakeDaemon(hello, on_invoke=on_invoke)
        self.run_ok(builtin("valuer.py"), d)
        self.assertEqual(d.requests[1]["op"], "disable_autorate")
        rate = d.ops("rate")[0]
        self.assertIsNone(rate["test"])
        self.assertEqual(rate["verdict"], "PT")
        self.assertAlmostEqual(rate["points"], 2 / (1 / 1.0 + 1 / 0.5))

        hello = make_hello(ntests=2, points=1.0,
                           executables={"checker": {"kind": "testlib"}, "valuer": {"kind": "system"}})
        d = FakeDaemon(hello, on_invoke=on_invoke)
        self.run_ok(builtin("valuer.py"), d)
        valuer = d.ops("invoke")[-1]
        self.assertEqual(valuer["exe"], "valuer")
        self.assertIsNone(valuer["test"])
        f = valuer["argv"][0]["file"]
        self.assertEqual(d.files[f], b"2\n1.0\n0.5\n")
        self.assertFalse(d.ops("rate"))
        last_write = max(r["id"] for r in d.ops("write"))
        self.assertLess(last_write, valuer["id"])

    # ---- 2.12: top-level return
    def test_grader_top_level_return(self):
        d = FakeDaemon(make_hello(ntests=1, submission_type="java"))
        self.run_ok(builtin("grader.py") + "log('not reached')\n", d)
        self.assertEqual([r["op"] for r in d.requests], ["hello", "rate"])
        self.assertEqual(d.requests[1], {"id": 1, "op": "rate", "test": None, "verdict": "CE",
                                         "points": None,
                                         "comment": "Only C++ and Python programs are supported"})

    def test_grader_languages(self):
        for type_, sources in [("cpp", ["submission", "problem/grader.cpp", "problem/grader.h"]),
                               ("python^3.11", ["submission", "problem/grader.py"]),
                               ("python3", ["submission", "problem/grader.py"]),
                               ("", None), ("rust", None)]:
            with self.subTest(type_):
                d = FakeDaemon(make_hello(ntests=1, submission_type=type_))
                self.run_ok(builtin("grader.py"), d)
                if sources is None:
                    self.assertFalse(d.ops("compile"))
                    self.assertEqual(d.ops("rate")[0]["verdict"], "CE")
                    continue
                self.assertEqual(d.ops("compile")[0]["sources"], sources)
                self.assertEqual(d.ops("compile")[0]["kind"], "testlib")
                self.assertEqual(len(d.ops("invoke")), 2)

    def test_return_inside_function_untouched(self):
        d = FakeDaemon(make_hello(ntests=1))
        self.run_ok("def f():\n    return 5\n"
                    "if f() == 5:\n    log('five')\n    return\n"
                    "log('not reached')\n", d)
        self.assertEqual(d.logs(), ["five"])

    # ---- 2.10, 2.13, globals
    def test_raw_and_groups(self):
        d = FakeDaemon(make_hello(ntests=3, groups={1: "g1", 2: "g1", 3: "g2"}))
        self.run_ok(builtin("raw.py") +
                    "log(sorted(groups), [t.no for t in groups['g1'].tests], tests[2].group == 'g2',\n"
                    "    groups['g1'].points_policy, submission.type, submission.id)\n", d)
        for inv in d.ops("invoke"):
            self.assertEqual(inv["argv"][1], {"file": "submission", "rw": False})
        self.assertEqual(d.logs(), ["['g1', 'g2'] [1, 2] True complete-group cpp s1"])

    # ---- failures of the strategy itself
    def test_exception_exit_1(self):
        d = FakeDaemon(make_hello(ntests=1))
        status, err = run_strategy("x = 1\nraise ValueError('boom')\n", d)
        self.assertEqual(status, 1)
        self.assertIn("Traceback", err)
        self.assertIn('File "strategy.py", line 2', err)
        self.assertIn("ValueError: boom", err)

    def test_exception_in_task_exit_1(self):
        d = FakeDaemon(make_hello(ntests=1))
        status, err = run_strategy("async def f():\n    await asyncio.sleep(0)\n    1 / 0\n"
                                   "asyncio.create_task(f())\n", d)
        self.assertEqual(status, 1)
        self.assertIn("ZeroDivisionError", err)

    def test_syntax_error_exit_1(self):
        d = FakeDaemon(make_hello(ntests=1))
        status, err = run_strategy("for test in tests\n", d)
        self.assertEqual(status, 1)
        self.assertIn("SyntaxError", err)

    def test_daemon_error_answer(self):
        d = FakeDaemon(make_hello(ntests=1),
                       on_invoke=lambda req: None)
        d.answer_orig = d.answer
        d.answer = lambda req: ({"error": "no such file"} if req.get("op") == "read"
                                else d.answer_orig(req))
        status, err = run_strategy("data = await File().read()\n", d)
        self.assertEqual(status, 1)
        self.assertIn("StrategyError: read: no such file", err)


class PrepareTest(unittest.TestCase):
    def test_builtins_compile(self):
        names = sorted(os.listdir(BUILTIN_DIR))
        self.assertEqual(names, sorted([
            "standard.py", "run_twice.py", "interactive.py", "file_io.py", "output_only.py",
            "compile_with_grader.py", "efficiency.py", "raw.py", "valuer.py", "grader.py"]))
        for name in names:
            with self.subTest(name):
                source = builtin(name)
                self.assertTrue(source.startswith("# Built-in strategy"))
                self.assertIn("pipelines.md, section 2.", source)
                segi_strategy.prepare(source, name)

    def test_plain_compile_rejects_top_level_return(self):
        with self.assertRaises(SyntaxError):
            compile("return\n", "s.py", "exec")
        segi_strategy.prepare("return\n")


class TypeTest(unittest.TestCase):
    T = segi_strategy.Type

    def test_matches(self):
        T = self.T
        self.assertTrue(T("python^3").matches("python^3.11"))
        self.assertTrue(T("python^3.11").matches(T("python^3")))
        self.assertTrue(T("cpp").matches("cpp^17"))
        self.assertFalse(T("python^2").matches("python^3"))
        self.assertFalse(T("python^3.1").matches("python^3.11"))
        self.assertFalse(T("cpp").matches("python"))
        self.assertEqual(str(T("python^3.11")), "python^3.11")
        self.assertEqual(T("python3"), T("python^3"))
        self.assertTrue(T("python3").matches("python^3"))
        self.assertFalse(T("python3").matches("python^2"))
        self.assertEqual(str(T("cpp")), "cpp")

    def test_intersection(self):
        T = self.T
        self.assertEqual(T.intersection("python", "python^3", "python^3.11"), T("python^3.11"))
        self.assertIsNone(T.intersection("cpp", "c"))
        self.assertIsNone(T.intersection("python^2", "python^3"))
        with self.assertRaises(ValueError):
            T("python^")

    def test_verdicts(self):
        s = segi_strategy
        self.assertIs(s._verdict_from_wire("OK"), s.OK)
        self.assertIs(s._verdict_from_wire("OLE"), s.RE)
        pt = s._verdict_from_wire("PT", 0.25)
        self.assertIsInstance(pt, s.PT)
        self.assertEqual(pt.points, 0.25)
        self.assertEqual(s._verdict_to_wire(s.PT(1)), ("PT", 1.0))
        with self.assertRaises(TypeError):
            s._verdict_to_wire(s.PT)


if __name__ == "__main__":
    unittest.main()
