"""Sandbox kernel: the child process of :mod:`components.tools.sandbox`. Standard library only.

Started as ``python -I -S _kernel.py <request fd> <response fd>`` with an empty environment,
stdout/stderr on /dev/null, and no inherited file descriptors besides the two pipes. The first
message says what to enforce (limits, the seccomp programs the parent compiled with libseccomp —
:mod:`components.tools.seccomp_policy` — and the isolation settings). Then, per episode:

1. the kernel's trusted part (a fork server, or a dedicated kernel for one episode), running
   under the *server* filter, forks the episode process ``E`` straight into **new IPC and PID
   namespaces** (``clone`` with the namespace flags), where it is PID 1: it cannot see, signal or
   schedule any process outside, SysV / POSIX IPC objects it creates live in its own namespace
   and disappear with it, and when it exits everything in the namespace is gone. ``E`` dies with
   the kernel (``PR_SET_PDEATHSIG``) and SIGXCPU ends it (a namespace's PID 1 would ignore it);
2. ``E`` applies resource limits (address space, CPU seconds, file size 0, no new processes, few
   file descriptors, no core dumps), drops to a uid of its own (distinct for every episode alive
   at the same time, never root), installs the **episode filter** — an allow-list: compute,
   memory, its two pipes, the clock, random bytes, exit; everything else fails with EPERM and a
   call from another ABI kills it. The restricting calls go through a small native helper
   (``_gd_isolate``), so **no module that gives raw memory or system-call access** (``ctypes``,
   ``mmap``, ``socket``, …) is ever loaded in the process, and none can be loaded afterwards;
3. it runs code cells in one persistent namespace; ``cypher()``, ``mark_evidence()`` and
   ``select_schema()`` are requests to the parent, which holds the only database connection and
   the authoritative registry of traced results.

A fork server (first message ``{"op": "serve"}``) keeps such an ``E`` prepared ahead of time, so
an episode starts in about a millisecond; see :func:`_serve`.

Wire format (both directions): 4-byte big-endian length, then UTF-8 JSON.
"""

import base64
import builtins
import contextlib
import gc
import io
import json
import os
import resource
import struct
import sys
import traceback

# Modules user code may import (loaded now, before the filter forbids opening files).
ALLOWED_MODULES = (
    "math",
    "cmath",
    "json",
    "re",
    "collections",
    "collections.abc",
    "itertools",
    "functools",
    "statistics",
    "datetime",
    "string",
    "heapq",
    "bisect",
    "random",
    "decimal",
    "fractions",
    "operator",
    "typing",
    "dataclasses",
    "copy",
    "pprint",
    "textwrap",
    "unicodedata",
    "enum",
    "numbers",
    "hashlib",
)
for _name in ALLOWED_MODULES:
    __import__(_name)

#: Modules that give raw memory or system-call access: never loaded by the kernel (the tests check
#: that none is in an episode's memory), and not loadable once the filter forbids opening files.
RAW_ACCESS_MODULES = (
    "ctypes",
    "_ctypes",
    "mmap",
    "socket",
    "_socket",
    "_posixsubprocess",
    "select",
    "fcntl",
    "termios",
)

_REQ_FD, _RESP_FD = int(sys.argv[1]), int(sys.argv[2])
_MAX_MESSAGE = 16 * 1024 * 1024

_SIGKILL, _SIGXCPU = 9, 24
#: exit status of a spare episode that found the parent's pipe closed (end-of-file) while waiting
#: for its episode: the fork server then reaps its other child and exits
_SHUTDOWN = 75
_CLONE_NEWUSER = 0x10000000
_UID_BASE = 100_000  # episode uids: _UID_BASE + the outer pid of its namespace's creator


# -- wire ------------------------------------------------------------------------------------
def _read_exact(n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(_REQ_FD, n - got)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _recv() -> dict:
    (size,) = struct.unpack(">I", _read_exact(4))
    if size > _MAX_MESSAGE:
        raise EOFError
    return json.loads(_read_exact(size))


def _send(msg: dict) -> None:
    data = json.dumps(msg, ensure_ascii=False, default=repr).encode("utf-8")
    payload = struct.pack(">I", len(data)) + data
    view = memoryview(payload)
    while view:
        n = os.write(_RESP_FD, view)
        view = view[n:]


class SandboxError(Exception):
    """Raised inside user code when a tool request is refused; ``code`` is machine-readable."""

    def __init__(self, message, code="tool_error"):
        super().__init__(message)
        self.code = code


def _request(msg: dict) -> dict:
    _send(msg)
    reply = _recv()
    if not reply.get("ok"):
        err = reply.get("error") or {}
        code = str(err.get("code", "tool_error"))
        raise SandboxError(f"{code}: {err.get('message', '')}", code)
    return reply


# -- traced results (child-side copies; the parent keeps the authoritative registry) ---------
_GENUINE: dict = {}  # id(obj) -> result id, for objects created by cypher() in this episode


class TracedResult:
    """Read-only copy of a query result recorded by the parent. Only the exact objects that
    ``cypher()`` returned can be marked as evidence; they cannot be copied or pickled."""

    __slots__ = ("id", "query", "params", "columns", "rows", "row_count", "truncated", "ordered", "result_hash")

    def __init__(self, **fields):
        for k in self.__slots__:
            object.__setattr__(self, k, fields[k])

    def __setattr__(self, key, value):
        raise AttributeError("TracedResult is read-only")

    def __delattr__(self, key):
        raise AttributeError("TracedResult is read-only")

    def __copy__(self):
        raise TypeError("a TracedResult cannot be copied; use the object cypher() returned")

    def __deepcopy__(self, memo):
        raise TypeError("a TracedResult cannot be copied; use the object cypher() returned")

    def __reduce_ex__(self, protocol):
        raise TypeError("a TracedResult cannot be pickled")

    def records(self):
        return [dict(zip(self.columns, r)) for r in self.rows]

    def __len__(self):
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __repr__(self):
        more = " (truncated)" if self.truncated else ""
        return f"TracedResult(id={self.id!r}, columns={self.columns!r}, rows={len(self.rows)}{more})"


def cypher(query, **params):
    """Run one read-only Cypher query (Neo4j dialect) with parameters; returns a TracedResult."""
    if not isinstance(query, str):
        raise TypeError("cypher() takes the query text as a string")
    try:
        json.dumps(params)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"cypher() parameters must be JSON values: {exc}") from None
    reply = _request({"op": "cypher", "query": query, "params": params})
    r = reply["result"]
    obj = TracedResult(
        id=r["id"],
        query=r["query"],
        params=r["params"],
        columns=tuple(r["columns"]),
        rows=tuple(tuple(row) for row in r["rows"]),
        row_count=r["row_count"],
        truncated=r["truncated"],
        ordered=r["ordered"],
        result_hash=r["result_hash"],
    )
    _GENUINE[id(obj)] = (obj, r["id"])
    return obj


def mark_evidence(*results):
    """Mark results returned by cypher() in this episode as the evidence for the answer."""
    if not results:
        raise SandboxError("mark_evidence() needs at least one result returned by cypher()", "bad_request")
    payload = []
    for r in results:
        if type(r) is not TracedResult:
            raise SandboxError(
                f"only results returned by cypher() can be evidence, not {type(r).__name__}",
                "forged_evidence",
            )
        entry = _GENUINE.get(id(r))
        if entry is None or entry[0] is not r:
            raise SandboxError("this TracedResult was not returned by cypher() in this episode", "forged_evidence")
        payload.append(
            {
                "id": r.id,
                "query": r.query,
                "params": r.params,
                "columns": list(r.columns),
                "rows": [list(x) for x in r.rows],
                "truncated": r.truncated,
                "result_hash": r.result_hash,
            }
        )
    return _request({"op": "mark_evidence", "results": payload})["marked"]


def select_schema():
    """The graph schema: labels with typed properties and directed relationship triples."""
    return _request({"op": "schema"})["schema"]


# -- cells -----------------------------------------------------------------------------------
class _CappedIO(io.StringIO):
    """Keeps at most ``cap`` bytes of UTF-8 (never part of a character; a lone surrogate, which
    no UTF-8 writer takes, is kept as "?"); ``overflow`` says that more was written."""

    def __init__(self, cap):
        super().__init__()
        self.cap, self.size, self.overflow = cap, 0, False

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        room = self.cap - self.size
        if room <= 0:
            self.overflow = self.overflow or bool(s)
            return len(s)
        data = s[: room + 1].encode("utf-8", "replace")  # never more than room + 1 characters
        if len(data) > room:
            self.overflow = True
            data = data[:room]
        keep = data.decode("utf-8", "ignore")
        self.size += len(keep.encode("utf-8"))
        super().write(keep)
        return len(s)


def _safe_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
    root = name.split(".")[0]
    if level != 0 or (name not in sys.modules and root not in sys.modules):
        raise ImportError(f"import of {name!r} is not allowed in the sandbox")
    if root not in {m.split(".")[0] for m in ALLOWED_MODULES}:
        raise ImportError(f"import of {name!r} is not allowed in the sandbox")
    return _real_import(name, globals, locals, fromlist, level)


_real_import = builtins.__import__


def _run_cell(code, namespace, output_cap):
    out = _CappedIO(output_cap)
    error = None
    try:
        compiled = compile(code, "<cell>", "exec")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            exec(compiled, namespace)  # noqa: S102 - this is the sandbox
    except SystemExit as exc:
        error = {"code": "exit", "message": f"code called exit({exc.code!r}); the cell stopped"}
    except MemoryError:
        error = {"code": "memory_limit", "message": "the cell exceeded the sandbox memory limit"}
    except RecursionError:
        error = {"code": "recursion", "message": "maximum recursion depth exceeded"}
    except SyntaxError as exc:
        error = {"code": "syntax_error", "message": f"{exc.msg} (line {exc.lineno})"}
    except SandboxError as exc:
        error = {"code": exc.code, "message": str(exc)}
    except BaseException as exc:  # noqa: BLE001 - report everything the cell raised
        tb = traceback.extract_tb(exc.__traceback__)
        cell_lines = [f.lineno for f in tb if f.filename == "<cell>"]
        where = f" (line {cell_lines[-1]})" if cell_lines else ""
        error = {"code": "exception", "message": f"{type(exc).__name__}: {exc}{where}"[:2000]}
    return {"op": "done", "stdout": out.getvalue(), "stdout_truncated": out.overflow, "error": error}


# -- isolation --------------------------------------------------------------------------------
# The native helper (components/tools/native/_gd_isolate.c) is the only way this process makes
# the restricting calls; ctypes is never loaded, so no raw-access module is ever in its memory.
try:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _gd_isolate
except ImportError:
    _gd_isolate = None
finally:
    sys.path.pop(0)


def _native():
    if _gd_isolate is None:
        raise OSError("the native isolation helper _gd_isolate is not built (pip install -e . builds it)")
    return _gd_isolate


def _install_filter(program):
    """Install a compiled seccomp program (raw ``struct sock_filter`` array)."""
    _native().install_filter(program)


def _unshare(flags):
    _native().unshare(flags)


def _strip_raw_access():
    """After the episode filter: the helper leaves, and no module that gives raw memory or syscall
    access is loaded (none ever was; re-importing one needs a file, and the filter refuses to open
    any)."""
    g = globals()
    g.pop("_gd_isolate", None)
    for name in list(sys.modules):
        if name == "_gd_isolate" or name.split(".")[0] in RAW_ACCESS_MODULES and name != "ctypes":
            del sys.modules[name]


def _apply_limits(memory_mb, cpu_s):
    mem = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))


def _drop_privileges(uid):
    """Become ``uid`` (no supplementary groups): even a call the filter allows then runs without
    root's privileges, and no two episodes share a uid."""
    if os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)


def _programs(hello):
    """The compiled filters (``None`` when the parent runs without one, for tests)."""
    raw = hello.get("filters") or {}
    return {role: base64.b64decode(text) for role, text in raw.items()}


def _prepare(hello, outer_pid):
    """In the episode process: limits, uid, filter, no raw-access modules, the cell namespace.
    ``(isolation description, error, namespace)``."""
    limits, iso = hello["limits"], hello.get("isolation") or {}
    notes, raw = [], None
    try:
        _native().set_pdeathsig(_SIGKILL)  # dies with the server
        _native().exit_on_signal(_SIGXCPU)  # as PID 1 of its namespace it would ignore SIGXCPU
        if iso.get("namespaces", True):
            notes.append("pid+ipc namespaces")
        _apply_limits(limits["memory_mb"], limits["cpu_s"])
        raw = sys.modules.get("ctypes") if iso.get("raw_access") else None  # a test relaxation only
        _drop_privileges(_UID_BASE + outer_pid)
        program = _programs(hello).get("episode")
        if program is None:
            if iso.get("filter", "allowlist") != "none":
                raise OSError("no seccomp filter was provided")
        else:
            _install_filter(program)
            notes.insert(0, f"seccomp allow-list ({len(program) // 8} instructions)")
        _strip_raw_access()
        notes.append("raw access (ctypes) for a test" if raw is not None else "no raw-access modules")
        notes.append(f"uid {os.getuid()}")
    except (OSError, AttributeError) as exc:
        if not hello.get("allow_weak_isolation"):
            return None, f"isolation unavailable: {exc}", None
        notes = [f"rlimits only ({exc})"]
    safe_builtins = dict(vars(builtins))
    safe_builtins["__import__"] = _safe_import
    for name in ("open", "input", "breakpoint", "exit", "quit", "help"):
        safe_builtins.pop(name, None)
    namespace = {
        "__builtins__": safe_builtins,
        "__name__": "__sandbox__",
        "cypher": cypher,
        "mark_evidence": mark_evidence,
        "select_schema": select_schema,
        "TracedResult": TracedResult,
    }
    if raw is not None:
        namespace["ctypes"] = raw
    return ", ".join(notes), None, namespace


def _episode(limits, prepared, outer_pid):
    """One episode: report readiness, then run cells until the parent closes it."""
    isolation, error, namespace = prepared
    if error is not None:
        _send({"op": "ready", "ok": False, "error": error})
        return
    _send({"op": "ready", "ok": True, "isolation": isolation, "pid": outer_pid})
    while True:
        try:
            msg = _recv()
        except EOFError:
            return
        if msg.get("op") != "run":
            return
        _send(_run_cell(msg["code"], namespace, limits["output_bytes"]))


def _status_code(status):
    """An exit status to pass up: the child's exit code, or 128 + the signal that killed it."""
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _close_pipes():
    for fd in (_REQ_FD, _RESP_FD):
        with contextlib.suppress(OSError):
            os.close(fd)


def _reap(pid):
    """Wait for ``pid``; its status as an exit code (``128 + signal`` when killed)."""
    _, status = os.waitpid(pid, 0)
    return _status_code(status)


def _fork_episode(hello, run_episode):
    """Fork the episode process ``E`` — into new IPC and PID namespaces, where it is PID 1 — which
    runs ``run_episode(its pid outside, failure)`` and exits; returns its pid. ``E`` learns that
    pid from this process over a pipe (it reports it, and its uid is derived from it)."""
    failure, flags = None, 0
    if (hello.get("isolation") or {}).get("namespaces", True):
        flags = hello["namespace_flags"] | (0 if os.geteuid() == 0 else _CLONE_NEWUSER)
    told, tell = os.pipe()
    try:
        pid = _native().fork_into(flags) if flags else os.fork()
    except OSError as exc:
        failure = (
            f"isolation unavailable: cannot create namespaces ({exc.strerror or exc}); "
            "run as root or enable unprivileged user namespaces"
        )
        pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(tell)
            outer = int(os.read(told, 32) or b"0")
            os.close(told)
            run_episode(outer, None if hello.get("allow_weak_isolation") else failure)
        except BaseException:  # noqa: BLE001 - EOF or a broken parent: just end
            code = 1
        os._exit(code)
    os.close(told)
    os.write(tell, str(pid).encode())
    os.close(tell)
    return pid


def _serve(hello):
    """Fork-server mode (first message ``{"op": "serve", …}``): this process runs only trusted
    code, under the server filter, and keeps a *spare* episode forked ahead of time — in its own
    namespaces, already limited, filtered and with its namespace built — waiting on a private
    pipe. When its turn comes the spare reads its episode's ``fork`` message and owns the two
    pipes until it exits, while this process forks the next spare, waits for the active one and
    reports how it ended (``{"op": "reaped"}``). Every episode gets the server's limits."""
    program = _programs(hello).get("server")
    try:
        if program is not None:
            _install_filter(program)
        elif (hello.get("isolation") or {}).get("filter", "allowlist") != "none":
            raise OSError("no seccomp filter was provided")
    except OSError as exc:
        if not hello.get("allow_weak_isolation"):
            _send({"op": "ready", "ok": False, "error": f"isolation unavailable: {exc}"})
            return
    gc.collect()
    gc.freeze()  # children then leave the shared pages alone instead of copying them
    _send({"op": "ready", "ok": True, "server": True, "pid": os.getpid()})
    spare = _fork_spare(hello)
    while True:
        pid, go = spare
        os.write(go, b"g")  # this child now takes the next episode ...
        os.close(go)
        spare = _fork_spare(hello)  # ... while the one after it is forked
        code = _reap(pid)
        try:
            _send(
                {
                    "op": "reaped",
                    "pid": pid,
                    "signal": code - 128 if code > 128 else None,
                    "exit": code if code <= 128 else None,
                }
            )
        except OSError:  # the parent closed its end: it is gone or closing
            break
        if code == _SHUTDOWN:
            break
    # Closing: the spare reads end-of-file on its private pipe and exits; reaped, nothing is left.
    pid, go = spare
    os.close(go)
    _reap(pid)
    _close_pipes()
    os._exit(0)


def _fork_spare(hello):
    """Fork a prepared episode that waits on a private pipe until it is its turn; returns
    ``(pid, write end of that pipe)``."""
    go_r, go_w = os.pipe()

    def run(outer, failure):
        os.close(go_w)
        prepared = (None, failure, None) if failure else _prepare(hello, outer)
        if os.read(go_r, 1):  # EOF: the server is gone or closing
            os.close(go_r)
            try:
                msg = _recv()
            except EOFError:  # the parent closed the pipe: the server closes too
                os._exit(_SHUTDOWN)
            if msg.get("op") == "fork":
                _episode(hello["limits"], prepared, outer)

    pid = _fork_episode(hello, run)
    os.close(go_r)
    return pid, go_w


def _dedicated(hello):
    """A kernel for one episode, isolated like a fork server's episodes: this process is ``S``."""
    program = _programs(hello).get("server")
    try:
        if program is not None:
            _install_filter(program)
    except OSError as exc:
        if not hello.get("allow_weak_isolation"):
            _send({"op": "ready", "ok": False, "error": f"isolation unavailable: {exc}"})
            return
    pid = _fork_episode(
        hello,
        lambda outer, failure: _episode(
            hello["limits"], (None, failure, None) if failure else _prepare(hello, outer), outer
        ),
    )
    _close_pipes()
    os._exit(_reap(pid))


def main():
    hello = _recv()
    if (hello.get("isolation") or {}).get("raw_access"):
        __import__("ctypes")  # the test relaxation: loaded before any filter forbids opening files
    if hello.get("op") == "serve":
        _serve(hello)
    else:
        _dedicated(hello)


if __name__ == "__main__":
    try:
        main()
    except EOFError:
        pass
