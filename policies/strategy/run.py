"""segi's strategy entry point: ``python3 -I run.py``, run in the directory holding this file,
``segi_strategy.py`` and the problem's ``strategy.py`` (``/strategy``, or wherever the daemon
puts them: both are found next to this file, not through the working directory).

Connects to the daemon (requests on fd 3, responses on fd 4), sends the hello, builds the DSL
globals and runs ``strategy.py`` (next to this file) as an async script: top-level ``await`` and
a top-level ``return`` are allowed (see segi_strategy.prepare). Then it waits for every task the
script started with ``asyncio.create_task`` (and any they start), and for the answers to every
request still outstanding, and exits:

* 0 when the script (and its tasks) ended, or stopped on an AbortedException that escaped it
  (a submission-wide abort, e.g. the submission did not compile: the daemon already decided);
* 1 on any other uncaught exception, in the script or in a task, with the traceback on stderr
  (the daemon makes it CF with the traceback as comment), or when the daemon refused a request
  the script never awaited (e.g. a write).
"""

import asyncio
import inspect
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # -I leaves the script's directory out of sys.path
sys.dont_write_bytecode = True  # /strategy is read-only

import segi_strategy  # noqa: E402

REQUEST_FD = 3
RESPONSE_FD = 4


def _report(exc):
    """The traceback on stderr, without the frames of this file above the strategy's own."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)


async def _run(source, filename):
    loop = asyncio.get_running_loop()
    tasks = []

    def task_factory(loop, coro, context=None):
        task = asyncio.Task(coro, loop=loop, context=context)
        tasks.append(task)
        return task

    loop.set_task_factory(task_factory)

    runtime = segi_strategy.Runtime(REQUEST_FD, RESPONSE_FD)
    status = 0
    try:
        await runtime.connect()
        env = runtime.globals()
        code = segi_strategy.prepare(source, filename)
        try:
            result = eval(code, env)
            if inspect.iscoroutine(result):
                await result
        except segi_strategy.TopLevelReturn:
            pass
        except segi_strategy.AbortedException as e:
            print(f"segi strategy: stopped: {e}", file=sys.stderr)
    except Exception as e:  # noqa: BLE001 - any error in the script is the strategy's failure
        _report(e)
        return 1

    # Tasks the script started and did not await (2.8, 2.9), and whatever those start.
    while True:
        pending = [t for t in tasks if not t.done()]
        if not pending:
            break
        await asyncio.wait(pending)
    for task in tasks:
        if task.cancelled():
            continue
        # An exception nobody retrieved (awaited, gathered) is the strategy's own failure.
        if not getattr(task, "_log_traceback", True):
            continue
        exc = task.exception()
        if exc is None or isinstance(exc, segi_strategy.AbortedException):
            continue
        _report(exc)
        status = 1

    # Answers to invocations nobody awaited (2.3 awaits nothing).
    await runtime.drain()
    for problem in runtime.unobserved_errors():
        print(f"segi strategy: {problem}", file=sys.stderr)
        status = 1
    runtime.shutdown()
    return status


def main():
    filename = "strategy.py"
    try:
        with open(os.path.join(HERE, filename), encoding="utf-8") as f:
            source = f.read()
    except OSError as e:
        print(f"segi strategy: cannot read {filename}: {e}", file=sys.stderr)
        return 1
    try:
        return asyncio.run(_run(source, filename))
    except Exception as e:  # noqa: BLE001 - e.g. a syntax error while compiling
        _report(e)
        return 1


if __name__ == "__main__":
    status = main()
    sys.stderr.flush()
    sys.exit(status)
