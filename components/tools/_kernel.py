"""Sandbox kernel: the child process of :mod:`components.tools.sandbox`. Standard library only.

Started as ``python -I -S _kernel.py <request fd> <response fd>`` with an empty environment,
stdout/stderr on /dev/null, and no inherited file descriptors besides the two pipes. It:

1. pre-imports a fixed set of pure-Python/stdlib modules that user code may use;
2. applies resource limits (address space, CPU seconds, file size 0, no new processes, few
   file descriptors, no core dumps);
3. installs a **seccomp** filter (Linux, x86_64/aarch64) that makes every file-opening,
   socket, process-creating, signal-sending, tracing, mounting and file-mutating system call
   fail with EPERM — so from then on the process can only compute and talk over its two pipes;
4. runs code cells in one persistent namespace; ``cypher()``, ``mark_evidence()`` and
   ``select_schema()`` are requests to the parent, which holds the only database connection
   and the authoritative registry of traced results.

In *fork-server* mode (first message ``{"op": "serve"}``) steps 2–4 happen in a child forked per
episode instead, so an episode starts in about a millisecond rather than a fresh interpreter's
tens of milliseconds; see :func:`_serve`.

Wire format (both directions): 4-byte big-endian length, then UTF-8 JSON.
"""

import builtins
import contextlib
import ctypes
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
    "math", "cmath", "json", "re", "collections", "collections.abc", "itertools", "functools",
    "statistics", "datetime", "string", "heapq", "bisect", "random", "decimal", "fractions",
    "operator", "typing", "dataclasses", "copy", "pprint", "textwrap", "unicodedata", "enum",
    "numbers", "hashlib",
)
for _name in ALLOWED_MODULES:
    __import__(_name)

_REQ_FD, _RESP_FD = int(sys.argv[1]), int(sys.argv[2])
_MAX_MESSAGE = 16 * 1024 * 1024

# -- seccomp ---------------------------------------------------------------------------------
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# Denied system calls by architecture (numbers from the kernel's unistd tables).
_DENY = {
    "x86_64": {
        "open": 2, "openat": 257, "openat2": 437, "creat": 85, "open_by_handle_at": 304,
        "name_to_handle_at": 303, "socket": 41, "socketpair": 53, "connect": 42, "bind": 49,
        "listen": 50, "accept": 43, "accept4": 288, "fork": 57, "vfork": 58, "clone": 56,
        "clone3": 435, "execve": 59, "execveat": 322, "kill": 62, "tkill": 200, "tgkill": 234,
        "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "pidfd_open": 434,
        "pidfd_send_signal": 424, "pidfd_getfd": 438, "ptrace": 101, "process_vm_readv": 310,
        "process_vm_writev": 311, "mkdir": 83, "mkdirat": 258, "rmdir": 84, "unlink": 87,
        "unlinkat": 263, "rename": 82, "renameat": 264, "renameat2": 316, "link": 86,
        "linkat": 265, "symlink": 88, "symlinkat": 266, "chmod": 90, "fchmod": 91,
        "fchmodat": 268, "chown": 92, "fchown": 93, "lchown": 94, "fchownat": 260,
        "truncate": 76, "ftruncate": 77, "mknod": 133, "mknodat": 259, "setrlimit": 160,
        "prlimit64": 302, "mount": 165, "umount2": 166, "chroot": 161, "pivot_root": 155,
        "unshare": 272, "setns": 308, "bpf": 321, "perf_event_open": 298,
        "io_uring_setup": 425, "memfd_create": 319, "userfaultfd": 323, "keyctl": 250,
        "add_key": 248, "request_key": 249, "sendfile": 40, "splice": 275, "tee": 276,
        "copy_file_range": 326, "inotify_init": 253, "inotify_init1": 294,
        "fanotify_init": 300, "reboot": 169, "init_module": 175, "finit_module": 313,
        "kexec_load": 246, "acct": 163, "swapon": 167, "swapoff": 168, "setsid": 112,
        "utime": 132, "utimes": 235, "utimensat": 280, "futimesat": 261,
        "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197,
        "lremovexattr": 198, "fremovexattr": 199, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "sethostname": 170, "setdomainname": 171, "setpriority": 141, "sched_setparam": 142,
        "sched_setscheduler": 144, "ioprio_set": 251, "migrate_pages": 256, "move_pages": 279,
        "kcmp": 312, "process_madvise": 440, "setuid": 105, "setgid": 106, "setreuid": 113,
        "setregid": 114, "setresuid": 117, "setresgid": 119, "setgroups": 116, "capset": 126,
        "settimeofday": 164, "clock_settime": 227, "adjtimex": 159, "iopl": 172, "ioperm": 173,
        "quotactl": 179, "syslog": 103, "vhangup": 153,
    },
    "aarch64": {
        "openat": 56, "openat2": 437, "open_by_handle_at": 265, "name_to_handle_at": 264,
        "socket": 198, "socketpair": 199, "connect": 203, "bind": 200, "listen": 201,
        "accept": 202, "accept4": 242, "clone": 220, "clone3": 435, "execve": 221,
        "execveat": 281, "kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138,
        "rt_tgsigqueueinfo": 240, "pidfd_open": 434, "pidfd_send_signal": 424,
        "pidfd_getfd": 438, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
        "mkdirat": 34, "unlinkat": 35, "renameat": 38, "renameat2": 276, "linkat": 37,
        "symlinkat": 36, "fchmod": 52, "fchmodat": 53, "fchown": 55, "fchownat": 54,
        "truncate": 45, "ftruncate": 46, "mknodat": 33, "setrlimit": 164, "prlimit64": 261,
        "mount": 40, "umount2": 39, "chroot": 51, "pivot_root": 41, "unshare": 97,
        "setns": 268, "bpf": 280, "perf_event_open": 241, "io_uring_setup": 425,
        "memfd_create": 279, "userfaultfd": 282, "keyctl": 219, "add_key": 217,
        "request_key": 218, "sendfile": 71, "splice": 76, "tee": 77, "copy_file_range": 285,
        "inotify_init1": 26, "fanotify_init": 262, "reboot": 142, "init_module": 105,
        "finit_module": 273, "kexec_load": 104, "acct": 89, "swapon": 224, "swapoff": 225,
        "setsid": 157, "utimensat": 88, "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7,
        "removexattr": 14, "lremovexattr": 15, "fremovexattr": 16, "open_tree": 428,
        "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "sethostname": 161, "setdomainname": 162, "setpriority": 140,
        "sched_setparam": 118, "sched_setscheduler": 119, "ioprio_set": 30,
        "migrate_pages": 238, "move_pages": 239, "kcmp": 272, "process_madvise": 440,
        "setuid": 146, "setgid": 144, "setreuid": 145, "setregid": 143, "setresuid": 147,
        "setresgid": 149, "setgroups": 159, "capset": 91, "settimeofday": 170,
        "clock_settime": 112, "adjtimex": 171, "syslog": 116, "quotactl": 60,
    },
}


# what the server process itself needs: forking, and setting each child's limits
_FORKS = ("fork", "vfork", "clone", "clone3", "setrlimit", "prlimit64")


def _seccomp_program(exclude=(), only=None):
    """Build a deny-list filter: ``(libc, sock_fprog, buffer, arch, n_denied)``; the whole list,
    or without ``exclude``, or just ``only``. Raises OSError where there is no table for this
    machine."""
    arch = os.uname().machine
    if arch not in _DENY:
        raise OSError(f"no seccomp syscall table for {arch}")
    table = _DENY[arch]
    names = [n for n in table if n not in exclude and (only is None or n in only)]
    deny = sorted({table[n] for n in names})
    eperm = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
    allow, kill = 0x7FFF0000, 0x80000000  # SECCOMP_RET_ALLOW, SECCOMP_RET_KILL_PROCESS
    ld_w_abs, jeq_k, jge_k, ret_k = 0x20, 0x15, 0x35, 0x06
    n = len(deny)
    # layout: 0 ld arch | 1 jeq arch | 2 ld nr | 3 jge x32 | 4..4+n-1 jeq nr | allow | deny | kill
    prog = [(ld_w_abs, 0, 0, 4), (jeq_k, 0, n + 4, _AUDIT_ARCH[arch]), (ld_w_abs, 0, 0, 0)]
    prog.append((jge_k, n + 1, 0, 0x40000000) if arch == "x86_64" else (jeq_k, 0, 0, 0xFFFFFFFF))
    for i, nr in enumerate(deny):
        prog.append((jeq_k, n - i, 0, nr))  # jump to the deny instruction
    prog += [(ret_k, 0, 0, allow), (ret_k, 0, 0, eperm), (ret_k, 0, 0, kill)]
    buf = b"".join(struct.pack("HBBI", *ins) for ins in prog)
    filt = ctypes.create_string_buffer(buf)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(prog), ctypes.cast(filt, ctypes.c_void_p))
    return ctypes.CDLL(None, use_errno=True), fprog, filt, arch, n


# Fork-server mode: the server process already runs as nobody under the whole filter except the
# process-creating calls (it must fork); each child then adds this one, denying those too.
_PROGRAM = None


def _install(program) -> None:
    libc, fprog = program[0], program[1]
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def _install_seccomp() -> str:
    """Install the deny-list filter (all of it, or in a fork-server child the rest of it);
    returns a description, or raises OSError."""
    program = _PROGRAM or _seccomp_program()
    _install(program)
    arch = program[3]
    return f"seccomp({arch}, {len(set(_DENY[arch].values()))} syscalls denied), uid {os.getuid()}"


_NOBODY = 65534


def _drop_privileges() -> None:
    """Running as root, become ``nobody`` (no supplementary groups) before the filter: even a
    system call the deny list misses then runs without root's privileges."""
    if os.getuid() == 0 or os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(_NOBODY, _NOBODY, _NOBODY)
        os.setresuid(_NOBODY, _NOBODY, _NOBODY)


def _apply_limits(memory_mb: int, cpu_s: int) -> None:
    mem = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))


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
        id=r["id"], query=r["query"], params=r["params"], columns=tuple(r["columns"]),
        rows=tuple(tuple(row) for row in r["rows"]), row_count=r["row_count"],
        truncated=r["truncated"], ordered=r["ordered"], result_hash=r["result_hash"],
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
            raise SandboxError(
                "this TracedResult was not returned by cypher() in this episode", "forged_evidence"
            )
        payload.append({
            "id": r.id, "query": r.query, "params": r.params, "columns": list(r.columns),
            "rows": [list(x) for x in r.rows], "truncated": r.truncated,
            "result_hash": r.result_hash,
        })
    return _request({"op": "mark_evidence", "results": payload})["marked"]


def select_schema():
    """The graph schema: labels with typed properties and directed relationship triples."""
    return _request({"op": "schema"})["schema"]


# -- cells -----------------------------------------------------------------------------------
class _CappedIO(io.StringIO):
    def __init__(self, cap):
        super().__init__()
        self.cap, self.size, self.overflow = cap, 0, False

    def write(self, s):
        if self.size >= self.cap:
            self.overflow = True
            return len(s)
        keep = s[: self.cap - self.size]
        self.size += len(keep)
        if len(keep) < len(s):
            self.overflow = True
        return super().write(keep)


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


def _prepare(limits, allow_weak_isolation):
    """Limits, privileges, filter and the cell namespace: ``(isolation, error, namespace)``."""
    _apply_limits(limits["memory_mb"], limits["cpu_s"])
    try:
        _drop_privileges()
        isolation = _install_seccomp()
    except (OSError, AttributeError) as exc:
        if not allow_weak_isolation:
            return None, f"seccomp unavailable: {exc}", None
        isolation = f"rlimits only ({exc})"
    safe_builtins = dict(vars(builtins))
    safe_builtins["__import__"] = _safe_import
    for name in ("open", "input", "breakpoint", "exit", "quit", "help"):
        safe_builtins.pop(name, None)
    namespace = {
        "__builtins__": safe_builtins, "__name__": "__sandbox__",
        "cypher": cypher, "mark_evidence": mark_evidence, "select_schema": select_schema,
        "TracedResult": TracedResult,
    }
    return isolation, None, namespace


def _episode(limits, prepared):
    """One episode: report readiness, then run cells until the parent closes it."""
    isolation, error, namespace = prepared
    if error is not None:
        _send({"op": "ready", "ok": False, "error": error})
        return
    _send({"op": "ready", "ok": True, "isolation": isolation, "pid": os.getpid()})
    while True:
        try:
            msg = _recv()
        except EOFError:
            return
        if msg.get("op") != "run":
            return
        _send(_run_cell(msg["code"], namespace, limits["output_bytes"]))


def _serve(hello):
    """Fork-server mode (first message ``{"op": "serve", "limits": …}``): this process runs only
    trusted code and keeps a *spare* child forked ahead of time, already limited, filtered and
    with its namespace built, waiting on a private pipe. When its turn comes the spare reads its
    episode's ``fork`` message and owns the two pipes until it exits, while this process forks
    the next spare, waits for the active child and reports how it ended (``{"op": "reaped"}``).
    Every child gets the server's limits; forking overlaps the previous episode."""
    global _PROGRAM
    try:
        rest = _seccomp_program(only=_FORKS)
        _drop_privileges()
        _install(_seccomp_program(exclude=_FORKS))
        _PROGRAM = rest
    except (OSError, AttributeError):
        _PROGRAM = None  # each child fails (or weakens) exactly as a dedicated kernel would
    gc.collect()
    gc.freeze()  # children then leave the shared pages alone instead of copying them
    _send({"op": "ready", "ok": True, "server": True, "pid": os.getpid()})
    spare = _fork_spare(hello)
    while True:
        pid, go = spare
        os.write(go, b"g")  # this child now takes the next episode ...
        os.close(go)
        spare = _fork_spare(hello)  # ... while the one after it is forked
        _, status = os.waitpid(pid, 0)
        _send({
            "op": "reaped", "pid": pid,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        })


def _fork_spare(hello):
    """Fork a prepared child that waits on a private pipe until it is its turn; returns
    ``(pid, write end of that pipe)``."""
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(go_w)
            prepared = _prepare(hello["limits"], hello.get("allow_weak_isolation"))
            if os.read(go_r, 1):  # EOF: the server is gone
                os.close(go_r)
                if _recv().get("op") == "fork":
                    _episode(hello["limits"], prepared)
        except BaseException:  # noqa: BLE001 - EOF or a broken parent: just end
            code = 1
        os._exit(code)
    os.close(go_r)
    return pid, go_w


def main():
    hello = _recv()
    if hello.get("op") == "serve":
        _serve(hello)
    else:
        _episode(hello["limits"], _prepare(hello["limits"], hello.get("allow_weak_isolation")))


if __name__ == "__main__":
    try:
        main()
    except EOFError:
        pass
