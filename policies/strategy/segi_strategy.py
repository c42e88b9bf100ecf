"""segi's strategy runtime: the Python DSL of pipelines.md (sections 2.3 to 2.13).

A strategy runs as ``python3 -I /strategy/run.py`` inside an ``evaluator`` sandbox and talks to
segid over two descriptors (see the strategy protocol): it writes JSON-lines requests to fd 3
and reads JSON-lines responses from fd 4. Every request carries an integer ``id`` the runtime
chooses (``0`` is the hello), every response the same ``id``; responses may come in any order.

How the runtime maps the DSL onto the protocol:

* Every DSL operation that talks to the daemon (``File.write``, ``File.read``, ``compile``,
  calling an ``Executable``, ``rate``, ...) writes its request to fd 3 *at call time*, so the
  requests reach the daemon in the order the strategy made the calls, whether or not the
  strategy awaits them (``user(...)`` runs even when nobody awaits it, and a later
  ``checker(..., output, ...)`` comes after it: the daemon does the reader-after-writer wait).
  The call returns a :class:`Request`: awaitable, and usable as a coroutine
  (``asyncio.create_task(user(...))`` works too).
* Responses are read from fd 4 by a reader callback on the event loop (``loop.add_reader``) and
  resolve the request futures by id. ``File.into_archive()`` is synchronous (the spec uses it
  without ``await``): it does a blocking round trip, reading fd 4 itself until its answer
  arrives and dispatching every other response it meets on the way.
* Futures only ever hold the response object; AbortedException and StrategyError are raised
  when a Request is awaited, so un-awaited failures never leak "exception never retrieved".
* The current test (``with test:``) lives in a ContextVar, so asyncio tasks started inside a
  ``with test`` block inherit it and each task's own ``with test`` is its own.

Verdicts: ``OK, WA, PE, RE, TLE, MLE, ILE, CF, CE, IG, SV`` are singletons (``test.verdict is
OK`` works); ``PT(points)`` is a class (``isinstance(v, PT)``, ``v.points``). ``test.verdict`` is
computed locally from the answers seen so far: an explicit ``test.rate`` wins; else the first
failed invocation or compilation (by arrival); else a testlib PT/PE; else OK once anything in the
test has finished; ``None`` before that. The daemon computes the authoritative verdicts.

Types (``Type``) are deliberately simple masks: ``name`` or ``name^version`` where version is a
dotted list (``python^3``, ``python^3.11``, ``cpp^17``). Two masks intersect when the names are
equal and one version is a component-wise prefix of the other (a missing version is the empty
prefix); the intersection is the more specific mask. So ``Type("python^3").matches("python^3.11")``
and ``Type("cpp").matches("cpp^17")`` hold, ``Type("python^2").matches("python^3")`` does not.
A name that ends in digits with no ``^`` is read as ``name^digits``: segi's language names
(languages.toml: ``c``, ``cpp``, ``python3``, ``rust``) become ``c``, ``cpp``, ``python^3``,
``rust``. ``submission.type`` is ``None`` when the daemon sends no (or an unreadable) type.

Details the spec leaves open, as decided here:

* ``compile(*sources, kind=None)``: with no ``kind``, the result is ``"user"`` when the
  submission is among the sources, else ``"system"``. A failure inside ``with test`` raises
  AbortedException (the test is CE); outside, the submission is CE and AbortedException is
  raised too: run.py treats an AbortedException that escapes the script as "the daemon has
  already decided" and exits 0.
* ``Executable.main_file``/``files`` are ``None``/``{}``: executables are daemon-side handles.
* ``test.group`` is the ``Group`` object (2.4), which compares equal to (and hashes as) its
  name (2.13); ``Group.dependencies`` is a list of ``Group`` objects.
* ``test.metrics`` holds one ``Metrics`` per finished run of a ``user``-kind executable in the
  test, in order of completion.
* Problem files are in ``problem_files`` (name -> File), and also bound as globals under their
  name with every non-identifier character replaced by ``_`` (``grader.cpp`` -> ``grader_cpp``)
  unless that would shadow a DSL name. Problem executables are in ``executables`` and bound as
  globals by name (``checker``, ``interactor``, ``validator``, ``valuer``, ...).
* ``into_archive()`` raises ``ArchiveError`` (a ValueError) when the file is not a ZIP archive.
  An entry becomes a File (written to the daemon) the first time it is indexed.
"""

from __future__ import annotations

import ast
import asyncio
import base64
import collections.abc
import contextvars
import io
import itertools
import json
import keyword
import math
import os
import re
import select
import sys
import zipfile

__all__ = [
    "AbortedException", "StrategyError", "ArchiveError", "Verdict", "PT", "VERDICTS",
    "Type", "Limits", "File", "Submission", "ReadWrite", "Pipe", "WritablePipe",
    "Executable", "Invocation", "InvocationResult", "Metrics", "Test", "Group", "Archive",
    "Request", "Runtime", "compile", "log", "prepare", "TopLevelReturn",
]


# ---------------------------------------------------------------------------------------------
# Errors

class AbortedException(Exception):
    """An operation of an aborted test (or of an aborted submission) was awaited."""


class StrategyError(RuntimeError):
    """The daemon refused a request (an ``{"error": ...}`` answer) or the connection broke."""


class ArchiveError(ValueError):
    """``into_archive()`` on a file that is not a (supported) archive."""


class TopLevelReturn(BaseException):
    """Raised in place of a top-level ``return`` of a strategy script (see :func:`prepare`)."""


# ---------------------------------------------------------------------------------------------
# Verdicts

class Verdict:
    """A verdict. The plain ones are singletons (globals ``OK``, ``WA``, ...); see ``PT``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        if isinstance(other, str):
            return self.name == other
        if isinstance(other, Verdict):
            return self.name == other.name and getattr(self, "points", None) == getattr(other, "points", None)
        return NotImplemented

    def __hash__(self):
        return hash(self.name)


class PT(Verdict):
    """Partial score: ``PT(points)``."""

    __slots__ = ("points",)

    def __init__(self, points):
        super().__init__("PT")
        if isinstance(points, bool) or not isinstance(points, (int, float)):
            raise TypeError(f"PT points must be a number, not {type(points).__name__}")
        if not math.isfinite(points):
            raise ValueError(f"PT points must be finite, not {points!r}")
        self.points = float(points)

    def __repr__(self):
        return f"PT({self.points:g})"

    __str__ = __repr__

    def __hash__(self):
        return hash(("PT", self.points))


VERDICT_NAMES = ("OK", "WA", "PE", "RE", "TLE", "MLE", "ILE", "CF", "CE", "IG", "SV")
VERDICTS: dict[str, Verdict] = {name: Verdict(name) for name in VERDICT_NAMES}
OK, WA, PE, RE, TLE, MLE, ILE, CF, CE, IG, SV = (VERDICTS[n] for n in VERDICT_NAMES)


def _verdict_from_wire(name, points=None):
    """A verdict object for a daemon answer's ``verdict``/``points``."""
    if name is None:
        return None
    if name == "PT":
        return PT(points if points is not None else 0.0)
    if name == "OLE":  # decisions 21: output limit counts as RE
        name = "RE"
    verdict = VERDICTS.get(name)
    if verdict is None:  # a verdict this runtime does not know: keep it, as its own singleton
        verdict = VERDICTS[name] = Verdict(name)
    return verdict


def _verdict_to_wire(verdict):
    """``(name, points)`` for a rate request."""
    if isinstance(verdict, str):
        if verdict == "PT":
            raise TypeError("PT needs points: use PT(points)")
        verdict = _verdict_from_wire(verdict)
    if isinstance(verdict, type) and issubclass(verdict, PT):
        raise TypeError("PT needs points: use PT(points)")
    if not isinstance(verdict, Verdict):
        raise TypeError(f"not a verdict: {verdict!r}")
    return verdict.name, getattr(verdict, "points", None)


# ---------------------------------------------------------------------------------------------
# Types and limits

class Type:
    """A type mask: ``name`` or ``name^version`` (version: dotted components)."""

    __slots__ = ("name", "version")

    def __init__(self, spec):
        if isinstance(spec, Type):
            self.name, self.version = spec.name, spec.version
            return
        if not isinstance(spec, str):
            raise TypeError(f"Type() takes a string, not {type(spec).__name__}")
        text = spec.strip()
        name, caret, version = text.partition("^")
        if not name or "^" in version or (caret and not version):
            raise ValueError(f"bad type {spec!r}")
        if not caret:  # segi's language names: "python3" is python^3
            m = re.fullmatch(r"(.*[^0-9.])([0-9]+(?:\.[0-9]+)*)", name)
            if m:
                name, caret, version = m.group(1), "^", m.group(2)
        parts = tuple(version.split(".")) if caret else ()
        if any(not p for p in parts):
            raise ValueError(f"bad type {spec!r}")
        self.name = name
        self.version = parts

    def __str__(self):
        return self.name + ("^" + ".".join(self.version) if self.version else "")

    def __repr__(self):
        return f"Type({str(self)!r})"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = Type(other)
            except ValueError:
                return False
        if not isinstance(other, Type):
            return NotImplemented
        return (self.name, self.version) == (other.name, other.version)

    def __hash__(self):
        return hash((self.name, self.version))

    @staticmethod
    def intersection(*types):
        """The most specific mask satisfying all of ``types``, or ``None``."""
        if not types:
            return None
        masks = []
        for t in types:
            if t is None:
                return None
            masks.append(Type(t))
        best = masks[0]
        for mask in masks[1:]:
            if mask.name != best.name:
                return None
            short, long_ = sorted((best.version, mask.version), key=len)
            if long_[: len(short)] != short:
                return None
            best = mask if mask.version is long_ else best
        return Type(best)

    def matches(self, other) -> bool:
        return Type.intersection(self, other) is not None


class Limits:
    """``Limits(time=seconds, memory=bytes, real_time=seconds, **custom)``; unset means default."""

    def __init__(self, time=None, memory=None, real_time=None, **custom):
        self.time = time
        self.memory = memory
        self.real_time = real_time
        self.custom = dict(custom)

    def to_json(self):
        out = {"time": self.time, "memory": self.memory, "real_time": self.real_time, **self.custom}
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def from_json(cls, obj):
        obj = dict(obj or {})
        return cls(obj.pop("time", None), obj.pop("memory", None), obj.pop("real_time", None), **obj)

    def __repr__(self):
        return "Limits(" + ", ".join(f"{k}={v!r}" for k, v in self.to_json().items()) + ")"


def _limits_to_wire(limits):
    if limits is None:
        return None
    if isinstance(limits, Limits):
        return limits.to_json()
    if isinstance(limits, dict):
        return Limits(**limits).to_json()
    raise TypeError(f"limits must be a Limits, not {type(limits).__name__}")


# ---------------------------------------------------------------------------------------------
# Requests and the connection

_current_test: contextvars.ContextVar = contextvars.ContextVar("segi_current_test", default=None)
# The tokens of the enclosing ``with test`` blocks, per context (so concurrent tasks that enter
# the same Test each restore their own state).
_test_tokens: contextvars.ContextVar = contextvars.ContextVar("segi_test_tokens", default=())
_runtime: "Runtime | None" = None


def _rt() -> "Runtime":
    if _runtime is None:
        raise StrategyError("the strategy runtime is not connected")
    return _runtime


class Request(collections.abc.Coroutine):
    """One request sent to the daemon: awaitable (any number of times) and coroutine-like.

    Awaiting it gives the response passed through ``transform`` (which may raise)."""

    def __init__(self, rid, op, future, transform=None, on_response=None):
        self.id = rid
        self.op = op
        self.future = future
        self.transform = transform
        self.on_response = on_response
        self.observed = False
        self._gen = None

    def done(self):
        return self.future.done()

    def response(self):
        return self.future.result() if self.future.done() else None

    def _result(self, response):
        if "error" in response:
            raise StrategyError(f"{self.op}: {response['error']}")
        return self.transform(response) if self.transform else response

    def __await__(self):
        self.observed = True
        response = yield from self.future.__await__()
        return self._result(response)

    # Coroutine protocol, so asyncio.create_task()/ensure_future() accept a Request.
    def send(self, value):
        if self._gen is None:
            self._gen = self.__await__()
        return self._gen.send(value)

    def throw(self, typ, val=None, tb=None):
        if self._gen is None:
            self._gen = self.__await__()
        if val is None and tb is None:
            return self._gen.throw(typ)
        return self._gen.throw(typ, val, tb)

    def close(self):
        if self._gen is not None:
            self._gen.close()

    def __repr__(self):
        state = "done" if self.future.done() else "pending"
        return f"<{type(self).__name__} #{self.id} {self.op} {state}>"


class Runtime:
    """The connection to the daemon: requests on ``wfd``, responses on ``rfd``."""

    def __init__(self, wfd=3, rfd=4, loop=None):
        global _runtime
        self.wfd = wfd
        self.rfd = rfd
        self.loop = loop or asyncio.get_running_loop()
        self._ids = itertools.count(0)
        self._files = itertools.count(1)
        self._pipes = itertools.count(1)
        self._pending: dict[int, Request] = {}
        self._sync_wanted: set[int] = set()
        self._sync_got: dict[int, dict] = {}
        self._stash: dict[int, dict] = {}
        self._buffer = b""
        self._closed: str | None = None
        self.requests: list[Request] = []  # every async request, for the final check
        self.hello: dict | None = None
        self.submission_aborted = False
        os.set_blocking(rfd, False)
        self.loop.add_reader(rfd, self._pump)
        _runtime = self

    # -- names
    def new_file_handle(self):
        return f"f{next(self._files)}"

    def new_pipe_handle(self):
        return f"p{next(self._pipes)}"

    # -- writing
    def _write(self, op, fields):
        if self._closed is not None:
            raise StrategyError(f"{op}: {self._closed}")
        rid = next(self._ids)
        line = (json.dumps({"id": rid, "op": op, **fields}, separators=(",", ":"),
                           ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        view = memoryview(line)
        while view:
            try:
                n = os.write(self.wfd, view)
            except BrokenPipeError:
                self._close("the daemon closed the request pipe")
                raise StrategyError(f"{op}: {self._closed}") from None
            view = view[n:]
        return rid

    def request(self, op, transform=None, on_response=None, cls=Request, **fields) -> Request:
        """Send a request now; the result is awaitable."""
        rid = self._write(op, fields)
        req = cls(rid, op, self.loop.create_future(), transform, on_response)
        self._pending[rid] = req
        self.requests.append(req)
        if rid in self._stash:  # cannot happen with a sane daemon; keep it consistent anyway
            self._deliver(req, self._stash.pop(rid))
        return req

    def request_sync(self, op, **fields) -> dict:
        """Send a request and block (the whole event loop) until its answer arrives."""
        rid = self._write(op, fields)
        self._sync_wanted.add(rid)
        try:
            while rid not in self._sync_got:
                if self._closed is not None:
                    raise StrategyError(f"{op}: {self._closed}")
                select.select([self.rfd], [], [])
                self._pump()
        finally:
            self._sync_wanted.discard(rid)
        response = self._sync_got.pop(rid)
        if "error" in response:
            raise StrategyError(f"{op}: {response['error']}")
        return response

    # -- reading
    def _pump(self):
        """Read what fd 4 has (never blocks) and dispatch every complete line."""
        if self._closed is not None:
            return
        try:
            chunk = os.read(self.rfd, 1 << 16)
        except BlockingIOError:
            return
        except OSError as e:
            self._close(f"reading responses failed: {e}")
            return
        if not chunk:
            self._close("the daemon closed the connection")
            return
        self._buffer += chunk
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            if not line.strip():
                continue
            try:
                response = json.loads(line)
                if not isinstance(response, dict):
                    raise ValueError("not an object")
                rid = response.get("id")
                if rid is None and "error" in response:  # the daemon could not parse a request
                    print(f"segi strategy: daemon error: {response['error']}", file=sys.stderr)
                    continue
                if not isinstance(rid, int) or isinstance(rid, bool):
                    raise ValueError("no integer id")
            except ValueError as e:
                self._close(f"protocol error: bad response line ({e}): {line[:200]!r}")
                return
            self._dispatch(rid, response)

    def _dispatch(self, rid, response):
        if rid in self._sync_wanted:
            self._sync_got[rid] = response
        elif rid in self._pending:
            self._deliver(self._pending[rid], response)
        else:
            self._stash[rid] = response

    def _deliver(self, req, response):
        self._pending.pop(req.id, None)
        if req.on_response is not None and "error" not in response:
            try:
                req.on_response(response)
            except Exception as e:  # bookkeeping must never break the reader
                response = {"id": req.id, "error": f"bad answer: {e!r}"}
        if not req.future.done():
            req.future.set_result(response)

    def _close(self, why):
        if self._closed is not None:
            return
        self._closed = why
        try:
            self.loop.remove_reader(self.rfd)
        except Exception:
            pass
        for req in list(self._pending.values()):
            self._deliver(req, {"id": req.id, "error": why})

    def shutdown(self):
        try:
            self.loop.remove_reader(self.rfd)
        except Exception:
            pass

    # -- end of the run
    async def drain(self):
        """Wait until every request sent so far is answered."""
        while self._pending and self._closed is None:
            await asyncio.gather(*(r.future for r in list(self._pending.values())))

    def unobserved_errors(self):
        """Error answers to requests the strategy never awaited (e.g. a failed write)."""
        out = []
        for req in self.requests:
            resp = req.response()
            if resp is not None and "error" in resp and not req.observed:
                out.append(f"request {req.id} ({req.op}): {resp['error']}")
        return out

    # -- startup
    async def connect(self):
        """Send the hello (id 0) and keep the answer."""
        hello = self.request("hello")
        self.hello = await hello
        return self.hello

    def globals(self) -> dict:
        """The DSL globals for the strategy script, from the hello answer."""
        return _build_globals(self, self.hello or {})


# ---------------------------------------------------------------------------------------------
# Files, pipes, archives

class File:
    """A file held by the daemon (``File()`` is a new, empty one)."""

    def __init__(self, type=None, *, _handle=None):
        self.handle = _handle or _rt().new_file_handle()
        self.type = type

    @property
    def type(self):
        return self._type

    @type.setter
    def type(self, value):
        self._type = None if value is None else Type(value)

    def rw(self):
        """This file, mounted read-write when passed to an invocation."""
        return ReadWrite(self)

    def write(self, data) -> Request:
        """Append ``data`` (bytes; a str is UTF-8 encoded). Sent at once; awaiting is optional."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"File.write takes bytes, not {type(data).__name__}")
        encoded = base64.b64encode(bytes(data)).decode("ascii")
        return _rt().request("write", file=self.handle, data=encoded)

    def read(self) -> Request:
        """The file's contents (awaitable -> bytes); the daemon waits for running writers."""
        return _rt().request("read", file=self.handle,
                             transform=lambda r: base64.b64decode(r.get("data", "")))

    def read_sync(self) -> bytes:
        """The file's contents, by a blocking round trip."""
        return base64.b64decode(_rt().request_sync("read", file=self.handle).get("data", ""))

    def into_archive(self) -> "Archive":
        """Interpret the file as a ZIP archive (synchronous)."""
        return Archive(self.read_sync())

    def __repr__(self):
        t = f" type={str(self._type)!r}" if self._type is not None else ""
        return f"<{type(self).__name__} {self.handle}{t}>"


class ReadWrite:
    """``file.rw()``: a marker asking for a read-write mount."""

    __slots__ = ("file",)

    def __init__(self, file):
        if not isinstance(file, File):
            raise TypeError("rw() wraps a File")
        self.file = file

    def __repr__(self):
        return f"{self.file!r}.rw()"


class Submission(File):
    """The submitted file, plus its metadata and the submission-wide ``rate``."""

    def __init__(self, info):
        try:
            type_ = Type(info["type"]) if info.get("type") else None
        except (TypeError, ValueError):
            type_ = None  # a language segi could not name: unknown type
        super().__init__(type_, _handle="submission")
        self.id = info.get("id")
        self.timestamp = info.get("timestamp")
        self.author = info.get("author")
        self.contest_id = info.get("contest_id")
        self.filename = info.get("filename")
        self.metadata = dict(info.get("metadata") or {})
        self.verdict = None
        self.comment = None

    def rate(self, verdict, comment=None) -> Request:
        name, points = _verdict_to_wire(verdict)
        self.verdict = verdict if isinstance(verdict, Verdict) else _verdict_from_wire(name, points)
        self.comment = comment
        return _rt().request("rate", test=None, verdict=name, points=points, comment=comment)

    def disable_autorate(self) -> Request:
        return _rt().request("disable_autorate")


class Pipe:
    """A pipe between invocations (read end by default; ``as_writable()`` for the write end)."""

    def __init__(self):
        self.handle = _rt().new_pipe_handle()

    def as_writable(self):
        return WritablePipe(self)

    def __repr__(self):
        return f"<Pipe {self.handle}>"


class WritablePipe:
    __slots__ = ("pipe",)

    def __init__(self, pipe):
        self.pipe = pipe

    def __repr__(self):
        return f"{self.pipe!r}.as_writable()"


class Archive:
    """A ZIP archive's entries by name; ``archive[name]`` is a File, KeyError if missing."""

    def __init__(self, data: bytes):
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
            self._infos = {i.filename: i for i in self._zip.infolist() if not i.is_dir()}
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError) as e:
            raise ArchiveError(f"not a ZIP archive: {e}") from None
        self._files: dict[str, File] = {}

    def __getitem__(self, name) -> File:
        if name in self._files:
            return self._files[name]
        info = self._infos[name]  # KeyError for a missing entry, like a dict
        try:
            data = self._zip.read(info)
        except (zipfile.BadZipFile, ValueError, NotImplementedError, EOFError, OSError) as e:
            raise ArchiveError(f"cannot extract {name!r}: {e}") from None
        file = File()
        file.write(data)
        self._files[name] = file
        return file

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name):
        return name in self._infos

    def __iter__(self):
        return iter(self._infos)

    def __len__(self):
        return len(self._infos)

    def keys(self):
        return list(self._infos)

    def __repr__(self):
        return f"<Archive {len(self._infos)} entries>"


# ---------------------------------------------------------------------------------------------
# Tests and groups

class Metrics:
    def __init__(self, obj=None):
        obj = dict(obj or {})
        self.time = obj.pop("time", None)
        self.memory = obj.pop("memory", None)
        self.real_time = obj.pop("real_time", None)
        for k, v in obj.items():
            if k.isidentifier() and not hasattr(self, k):
                setattr(self, k, v)

    def __repr__(self):
        return f"Metrics(time={self.time!r}, memory={self.memory!r}, real_time={self.real_time!r})"


class Group:
    def __init__(self, name, info):
        self.name = name
        self.points_policy = info.get("points_policy")
        self.feedback_policy = info.get("feedback_policy")
        self.dependencies: list[Group] = []
        self.tests: list[Test] = []
        self._dependency_names = list(info.get("dependencies") or [])

    def __eq__(self, other):
        if isinstance(other, str):
            return self.name == other
        if isinstance(other, Group):
            return self.name == other.name
        return NotImplemented

    def __hash__(self):
        return hash(self.name)

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"<Group {self.name!r}: {len(self.tests)} tests>"


_TEST_RESERVED = {"no", "points", "group", "verdict", "comment", "metrics", "rate", "aborted"}


class Test:
    """One test: ``no``, ``input``, ``answer`` (Files), ``points``, ``group``, ``verdict``, ..."""

    def __init__(self, info, groups):
        self.no = info["no"]
        self.points = info.get("points")
        group = info.get("group")
        self.group = groups.get(group) if group is not None else None
        if group is not None and self.group is None:  # a group the hello did not describe
            self.group = groups[group] = Group(group, {})
        if self.group is not None:
            self.group.tests.append(self)
        for key, handle in (info.get("files") or {}).items():
            if key.isidentifier() and not keyword.iskeyword(key) and key not in _TEST_RESERVED:
                setattr(self, key, File(_handle=handle))
        self.metrics: list[Metrics] = []
        self.aborted = False
        self._rated = None          # (verdict, comment) from test.rate
        self._failure = None        # (verdict, comment) of the first failure seen
        self._testlib = None        # (verdict, comment): a testlib PT/PE
        self._finished = False      # anything in the test has an answer

    # -- with test:
    def __enter__(self):
        token = _current_test.set(self)
        _test_tokens.set(_test_tokens.get() + (token,))
        return self

    def __exit__(self, exc_type, exc, tb):
        tokens = _test_tokens.get()
        _test_tokens.set(tokens[:-1])
        _current_test.reset(tokens[-1])
        return exc_type is not None and issubclass(exc_type, AbortedException)

    # -- verdicts
    @property
    def verdict(self):
        for slot in (self._rated, self._failure, self._testlib):
            if slot is not None:
                return slot[0]
        return OK if self._finished else None

    @property
    def comment(self):
        for slot in (self._rated, self._failure, self._testlib):
            if slot is not None:
                return slot[1]
        return None

    def rate(self, verdict, comment=None) -> Request:
        name, points = _verdict_to_wire(verdict)
        self._rated = (verdict if isinstance(verdict, Verdict) else _verdict_from_wire(name, points),
                       comment)
        return _rt().request("rate", test=self.no, verdict=name, points=points, comment=comment)

    def _note(self, response, kind):
        """Bookkeeping for an answer (invoke or compile) that belongs to this test."""
        if response.get("aborted"):
            self.aborted = True
            return
        self._finished = True
        verdict = _verdict_from_wire(response.get("verdict"), response.get("points"))
        if response.get("failed"):
            self.aborted = True
            if self._failure is None:
                self._failure = (verdict or CF, response.get("comment"))
        elif kind == "testlib" and verdict is not None and verdict.name in ("PT", "PE"):
            self._testlib = (verdict, response.get("comment"))

    def __repr__(self):
        return f"<Test {self.no}>"


# ---------------------------------------------------------------------------------------------
# Executables and invocations

class InvocationResult:
    def __init__(self, response):
        self.exit_code = response.get("exit_code")
        self.signal = response.get("signal")
        self.points = response.get("points")
        self.verdict = _verdict_from_wire(response.get("verdict"), self.points)
        self.comment = response.get("comment")
        self.metrics = Metrics(response.get("metrics"))
        self.failed = bool(response.get("failed"))
        self.aborted = bool(response.get("aborted"))

    def __repr__(self):
        return (f"InvocationResult(exit_code={self.exit_code!r}, verdict={self.verdict!r}, "
                f"metrics={self.metrics!r})")


class Invocation(Request):
    """The future of one invocation; awaiting gives an InvocationResult or raises
    AbortedException (the invocation failed, or its test was aborted)."""

    test = None

    def _result(self, response):
        if "error" in response:
            raise StrategyError(f"invoke: {response['error']}")
        if response.get("failed") or response.get("aborted"):
            raise AbortedException(response.get("comment") or
                                   ("invocation failed" if response.get("failed") else "test aborted"))
        if self.test is not None and self.test.aborted:
            raise AbortedException(self.test.comment or "test aborted")
        if self.test is None and _rt().submission_aborted:
            raise AbortedException("submission aborted")
        return InvocationResult(response)


class CompileRequest(Request):
    test = None

    def _result(self, response):
        if "error" in response:
            raise StrategyError(f"compile: {response['error']}")
        if response.get("failed") or "executable" not in response:
            where = f"test {self.test.no}" if self.test is not None else "submission"
            raise AbortedException(f"compilation failed ({where}): "
                                   f"{response.get('comment') or response.get('verdict') or 'CE'}")
        return Executable(response["executable"], self.kind)


class Executable:
    """A runnable program held by the daemon. Call it to invoke it."""

    def __init__(self, handle, kind="user", name=None):
        self.handle = handle
        self.kind = kind
        self.name = name or handle
        self.main_file = None
        self.files = {}

    def __call__(self, *argv, stdin=None, stdout=None, stderr=None, files=None, limits=None):
        test = _current_test.get()
        kind = self.kind
        if kind not in ("user", "system", "testlib"):
            raise ValueError(f"bad executable kind {kind!r}")
        fields = {
            "exe": self.handle,
            "kind": kind,
            "test": test.no if test is not None else None,
            "argv": [_arg_to_wire(a) for a in argv],
            "stdin": _stdio_to_wire(stdin, "stdin"),
            "stdout": _stdio_to_wire(stdout, "stdout"),
            "stderr": _stdio_to_wire(stderr, "stderr"),
            "files": _files_to_wire(files),
            "limits": _limits_to_wire(limits),
        }
        rt = _rt()

        def on_response(response):
            if response.get("failed") and test is None:
                rt.submission_aborted = True
            if test is not None:
                test._note(response, kind)
                if kind == "user" and not response.get("aborted") and response.get("metrics") is not None:
                    test.metrics.append(Metrics(response["metrics"]))

        inv = rt.request("invoke", on_response=on_response, cls=Invocation, **fields)
        inv.test = test
        return inv

    def __repr__(self):
        return f"<Executable {self.name} kind={self.kind}>"


def _arg_to_wire(arg):
    if isinstance(arg, str):
        return {"str": arg}
    if isinstance(arg, (bytes, bytearray)):
        try:
            return {"str": bytes(arg).decode("utf-8")}
        except UnicodeDecodeError:
            raise ValueError("a bytes argument must be valid UTF-8") from None
    if isinstance(arg, File):
        return {"file": arg.handle, "rw": False}
    if isinstance(arg, ReadWrite):
        return {"file": arg.file.handle, "rw": True}
    if isinstance(arg, Pipe):
        return {"pipe": arg.handle, "write": False}
    if isinstance(arg, WritablePipe):
        return {"pipe": arg.pipe.handle, "write": True}
    raise TypeError(f"an argument must be str, bytes, File or Pipe, not {type(arg).__name__}")


def _stdio_to_wire(obj, what):
    if obj is None:
        return None
    if isinstance(obj, File):
        return {"file": obj.handle}
    if isinstance(obj, ReadWrite):
        return {"file": obj.file.handle}
    if isinstance(obj, Pipe):
        return {"pipe": obj.handle}
    if isinstance(obj, WritablePipe):
        return {"pipe": obj.pipe.handle}
    raise TypeError(f"{what} must be a File or a Pipe, not {type(obj).__name__}")


def _files_to_wire(files):
    if files is None:
        return {}
    if not isinstance(files, dict):
        raise TypeError("files must be a dict of path -> File")
    out = {}
    for path, f in files.items():
        if not isinstance(path, str):
            raise TypeError("files keys must be paths (str)")
        if isinstance(f, File):
            out[path] = {"file": f.handle, "rw": False}
        elif isinstance(f, ReadWrite):
            out[path] = {"file": f.file.handle, "rw": True}
        else:
            raise TypeError(f"files[{path!r}] must be a File, not {type(f).__name__}")
    return out


def compile(*sources, kind=None) -> CompileRequest:
    """Compile ``sources`` (Files) into an Executable (awaitable; the request is sent at once)."""
    if len(sources) == 1 and isinstance(sources[0], (list, tuple)):
        sources = tuple(sources[0])
    if not sources:
        raise TypeError("compile() needs at least one source file")
    for s in sources:
        if not isinstance(s, File):
            raise TypeError(f"compile() takes Files, not {type(s).__name__}")
    if kind is None:
        kind = "user" if any(isinstance(s, Submission) for s in sources) else "system"
    if kind not in ("user", "system", "testlib"):
        raise ValueError(f"bad executable kind {kind!r}")
    test = _current_test.get()
    rt = _rt()

    def on_response(response):
        if test is not None:
            test._note(response, "compile")
        elif response.get("failed"):
            rt.submission_aborted = True
            sub = getattr(rt, "submission", None)
            if sub is not None:
                sub.verdict = _verdict_from_wire(response.get("verdict") or "CE")
                sub.comment = response.get("comment")

    req = rt.request("compile", on_response=on_response, cls=CompileRequest,
                     sources=[s.handle for s in sources], kind=kind,
                     test=test.no if test is not None else None)
    req.test = test
    req.kind = kind
    return req


def log(*parts) -> Request:
    """A debug message to the daemon's log."""
    return _rt().request("log", message=" ".join(str(p) for p in parts))


# ---------------------------------------------------------------------------------------------
# Globals and the script transform

_IDENT = re.compile(r"[^0-9A-Za-z_]")


def _global_name(name):
    ident = _IDENT.sub("_", name)
    if not ident or ident[0].isdigit():
        ident = "_" + ident
    return None if keyword.iskeyword(ident) else ident


def _build_globals(rt, hello):
    groups = {name: Group(name, info or {}) for name, info in (hello.get("groups") or {}).items()}
    for g in groups.values():
        g.dependencies = [groups[d] if d in groups else Group(d, {}) for d in g._dependency_names]
    tests = [Test(info, groups) for info in hello.get("tests") or []]
    submission = Submission(hello.get("submission") or {})
    rt.submission = submission
    executables = {name: Executable(name, (info or {}).get("kind", "system"), name)
                   for name, info in (hello.get("executables") or {}).items()}
    problem_files = {name: File(_handle=f"problem/{name}") for name in hello.get("problem_files") or []}
    default_limits = {kind: Limits.from_json(v) for kind, v in (hello.get("limits") or {}).items()}

    env = {
        "__name__": "__main__",
        "__builtins__": __builtins__,
        "asyncio": asyncio,
        "File": File, "Submission": Submission, "Pipe": Pipe, "Type": Type, "Limits": Limits,
        "Executable": Executable, "Archive": Archive, "ArchiveError": ArchiveError,
        "Test": Test, "Group": Group, "Verdict": Verdict, "PT": PT,
        "AbortedException": AbortedException, "StrategyError": StrategyError,
        "InvocationResult": InvocationResult,
        "compile": compile, "log": log,
        "submission": submission, "tests": tests, "groups": groups,
        "executables": executables, "problem_files": problem_files,
        "default_limits": default_limits,
        "__segi_return__": TopLevelReturn,
    }
    env.update(VERDICTS)
    for name, exe in executables.items():
        if name.isidentifier() and not keyword.iskeyword(name) and name not in env:
            env[name] = exe
    for name, f in problem_files.items():
        ident = _global_name(name)
        if ident and ident not in env:
            env[ident] = f
    return env


class _TopLevelReturns(ast.NodeTransformer):
    """Replace ``return [x]`` outside any function with ``raise __segi_return__([x])``."""

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def visit_Return(self, node):
        call = ast.Call(func=ast.Name(id="__segi_return__", ctx=ast.Load()),
                        args=[node.value] if node.value is not None else [], keywords=[])
        return ast.copy_location(ast.Raise(exc=call, cause=None), node)


def prepare(source: str, filename: str = "strategy.py"):
    """Compile a strategy script: top-level ``await`` allowed, top-level ``return`` ends it.

    A top-level ``return`` becomes ``raise __segi_return__(...)`` (TopLevelReturn, a
    BaseException, so ``except Exception`` in the script does not catch it); the module body
    stays module-level code, so the script's names are globals exactly as in a plain script.
    Evaluating the result with ``eval(code, env)`` gives a coroutine when the script awaits."""
    import builtins
    tree = ast.parse(source, filename, "exec")
    tree = _TopLevelReturns().visit(tree)
    ast.fix_missing_locations(tree)
    return builtins.compile(tree, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                            dont_inherit=True)
