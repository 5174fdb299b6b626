"""GraphCert's Python + Cypher sandbox: one persistent, contained interpreter per episode.

The model's code runs in a **separate child process** (:mod:`components.tools._kernel`) that
holds no database handle. Inside it, ``cypher(query, **params)`` is a request to this (parent)
process, which runs the query through the one read-only query path
(:class:`components.cypher.query_path.ReadOnlyQueryPath`: static refusal of writes, procedures,
file access; Neo4j-dialect rewriting; a read-only connection underneath), records a
:class:`~components.tools.traced.TracedResult` in the episode's registry and sends a copy back.
``mark_evidence(*results)`` is accepted only for results registered here, unchanged.

Whatever the code does — loops, memory bombs, forks, sockets, file access, ``sys.exit``, crashes,
huge output, forged evidence — the cell ends with a structured :class:`CellResult` and this
process keeps running. See docs/sandbox.md for the threat model.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import os
import select
import signal
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.cypher.parse import MAX_QUERY_CHARS
from components.cypher.query_path import check_params, json_size
from components.graph.errors import GraphError
from components.graph.schema import GraphSchema
from components.tools.traced import MAX_ROWS, TracedResult

__all__ = ["MAX_TIMEOUT_S", "CellResult", "SandboxEpisode", "SandboxLimits"]

KERNEL = Path(__file__).with_name("_kernel.py")
#: code this module runs without importing it (the kernel is a child process's script, and the
#: native helper is loaded there): part of the code digest of every layer that uses the sandbox
__code_deps__ = ("components.tools._kernel", "components.tools._gd_isolate")

#: The longest wall-clock limit a cell (or an episode's start-up) may have: one hour. A longer one
#: is refused with a ValueError, not clamped: it is far past any real cell (the default is 10 s and
#: an episode's whole CPU budget 60 s), so it is a mistake (milliseconds given as seconds, say),
#: and the operating system's waits overflow for values past about 9e9 s.
MAX_TIMEOUT_S = 3600.0
#: How long closing waits for a kernel to end by itself (its episode reads end-of-file and exits,
#: the kernel reaps it and exits) before it kills the episode, then the kernel's process group.
_CLOSE_GRACE_S = 2.0
#: What one call record keeps of a refused query's text (the rest is cut).
_RECORD_QUERY_CHARS = 1000
#: What an error sent by the child may carry (longer codes and messages are cut).
_ERROR_CODE_CHARS, _ERROR_MESSAGE_CHARS = 64, 4000


@dataclass(frozen=True)
class SandboxLimits:
    """What one episode may use. The last three fields are **test-only relaxations** of one
    isolation layer at a time (so that each layer can be shown to hold on its own); production
    code never changes them: ``filter`` (``"allowlist"``, or ``"none"``: no seccomp filter),
    ``namespaces`` (per-episode PID + IPC namespaces), ``raw_access`` (load ``ctypes`` into the
    episode, as ``ctypes`` in its namespace, so that a test can make raw system calls against the
    filter; without it no raw-access module is ever in the episode's memory)."""

    cell_timeout_s: float = 10.0  # wall clock per cell, parent-enforced (kills the child)
    cpu_s: int = 60  # CPU seconds for the whole episode (RLIMIT_CPU in the child)
    memory_mb: int = 512  # address space of the child (RLIMIT_AS)
    output_bytes: int = 64_000  # captured stdout/stderr per cell, UTF-8 bytes (then `stdout_truncated`)
    max_rows: int = MAX_ROWS  # rows kept per query (one more is fetched to set `truncated`)
    max_queries: int = 200  # successful cypher() calls per episode
    max_message_bytes: int = 16 * 1024 * 1024  # one message from the child
    max_message_values: int = 1_000_000  # JSON values in one message from the child (bounds parsing)
    max_episode_bytes: int = 16 * 1024 * 1024  # rows, query texts and parameters an episode's calls keep
    max_calls: int = 1000  # tool calls recorded per episode; later ones are refused (`call_limit`)
    startup_timeout_s: float = 30.0
    filter: str = "allowlist"
    namespaces: bool = True
    raw_access: bool = False

    def __post_init__(self) -> None:
        if self.filter not in ("allowlist", "none"):
            raise ValueError(f"filter must be 'allowlist' or 'none', not {self.filter!r}")
        for name in ("cell_timeout_s", "startup_timeout_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 < value <= MAX_TIMEOUT_S):
                raise ValueError(f"{name} must be a number of seconds > 0 and <= {MAX_TIMEOUT_S:g}, not {value!r}")


@dataclass
class CellResult:
    ok: bool
    stdout: str = ""
    stdout_truncated: bool = False
    error: dict[str, str] | None = None
    traced: list[TracedResult] = field(default_factory=list)  # results created by this cell
    evidence: list[str] = field(default_factory=list)  # all ids marked so far in the episode
    episode_alive: bool = True
    elapsed_s: float = 0.0
    stdout_limit: int | None = None  # the cap `stdout` was cut at (UTF-8 bytes), when it was

    def observation(self, preview_rows: int = 5, limit: int | None = None) -> str:
        """What a model sees of this cell: its output, a one-line summary with the first rows of
        every query it ran, and its error; ``limit`` caps the text."""
        parts = []
        if self.stdout:
            cut = ""
            if self.stdout_truncated:
                at = f" at {self.stdout_limit} bytes" if self.stdout_limit is not None else ""
                cut = f" …(output truncated{at})"
            parts.append(self.stdout.rstrip("\n") + cut)
        for t in self.traced:
            preview = ", ".join(repr(r) for r in t.rows[:preview_rows])
            more = " (truncated at the row limit)" if t.truncated else ""
            parts.append(f"[{t.id}] {t.row_count} rows{more}; columns {list(t.columns)}; first rows: {preview}")
        if self.error:
            parts.append(f"Error ({self.error.get('code')}): {self.error.get('message')}")
        text = "\n".join(parts) if parts else "(no output)"
        return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "stdout": self.stdout,
            "stdout_truncated": self.stdout_truncated,
            "stdout_limit": self.stdout_limit,
            "error": self.error,
            "traced": [t.to_json() for t in self.traced],
            "evidence": list(self.evidence),
            "episode_alive": self.episode_alive,
            "elapsed_s": round(self.elapsed_s, 4),
        }


class _KernelGone(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _clip(text: str, limit: int) -> str:
    """At most ``limit`` characters of ``text``, lone surrogates (which no UTF-8 writer takes:
    JSON escapes can carry them) replaced."""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text.encode("utf-8", "replace").decode("utf-8")


def _clean_error(err: Any) -> dict[str, str]:
    """An error dict as the child (or a refusal quoting its input) gave it, cut to a bounded size:
    a string ``code`` and ``message``, nothing else."""
    if not isinstance(err, dict):
        return {"code": "exception", "message": _clip(str(type(err).__name__), _ERROR_MESSAGE_CHARS)}
    code, message = err.get("code"), err.get("message")
    return {
        "code": _clip(code if isinstance(code, str) else "exception", _ERROR_CODE_CHARS),
        "message": _clip(message if isinstance(message, str) else "", _ERROR_MESSAGE_CHARS),
    }


def _cut_utf8(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` UTF-8 bytes (never inside a character); whether it was cut."""
    head = text[: limit + 1].encode("utf-8", "replace")  # a lone surrogate becomes "?"
    if len(head) <= limit:  # then all of text is there: more characters would be more bytes
        return head.decode("utf-8"), False
    return head[:limit].decode("utf-8", "ignore"), True


def _send_msg(fd: int | None, msg: Mapping[str, Any], deadline: float | None = None) -> None:
    """Write one message; with a ``deadline`` the write never blocks past it (a child that stops
    reading cannot stall this process): the descriptor is non-blocking and waited on with select."""
    data = json.dumps(msg, ensure_ascii=False).encode("utf-8")
    payload = memoryview(struct.pack(">I", len(data)) + data)
    if deadline is None:
        while payload:
            n = os.write(fd, payload)  # type: ignore[arg-type]
            payload = payload[n:]
        return
    os.set_blocking(fd, False)  # type: ignore[arg-type]
    try:
        while payload:
            try:
                n = os.write(fd, payload)  # type: ignore[arg-type]
                payload = payload[n:]
                continue
            except BlockingIOError:
                pass
            left = deadline - time.monotonic()
            if left <= 0:
                raise _KernelGone("timeout", "the sandbox stopped reading its replies")
            select.select([], [fd], [], min(left, MAX_TIMEOUT_S))
    finally:
        os.set_blocking(fd, True)  # type: ignore[arg-type]


def _spawn_kernel() -> tuple[subprocess.Popen[bytes], int, int]:
    """A fresh ``_kernel.py`` process and the parent's ends of its pipes (to, from)."""
    req_r, req_w = os.pipe()
    resp_r, resp_w = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(KERNEL), str(req_r), str(resp_w)],
            pass_fds=(req_r, resp_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={},
            cwd="/",
            close_fds=True,
            start_new_session=True,
        )
    finally:
        os.close(req_r)
        os.close(resp_w)
    return proc, req_w, resp_r


def _kill_pid(pid: int | None) -> None:
    if pid is not None:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _exited(proc: subprocess.Popen[bytes], within_s: float) -> bool:
    try:
        proc.wait(timeout=within_s)
        return True
    except subprocess.TimeoutExpired:
        return False


def _terminate(
    proc: subprocess.Popen[bytes] | None,
    fds: tuple[int | None, ...],
    child_pid: int | None = None,
    *,
    kill_child: bool = True,
) -> None:
    """End a kernel process so that nothing of it is left, not even an unreaped (zombie) process.

    Our pipe ends are closed first: an idle episode reads end-of-file and exits, and the kernel,
    its parent, reaps it and exits; we reap the kernel. An episode still running code is killed
    (``child_pid``, its pid outside its namespace: at once with ``kill_child``, else after
    ``_CLOSE_GRACE_S``), and the kernel then still reaps it. Only a kernel that has not ended
    after that is killed with its process group (its children then go to init to be reaped)."""
    alive = proc is not None and proc.poll() is None
    if alive and kill_child:
        _kill_pid(child_pid)
    for fd in fds:
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
    if proc is None or _exited(proc, _CLOSE_GRACE_S):
        return
    if not kill_child:
        _kill_pid(child_pid)
        if _exited(proc, _CLOSE_GRACE_S):
            return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def _filters(limits: SandboxLimits, allow_weak_isolation: bool) -> dict[str, str]:
    """The compiled seccomp programs the kernel installs (base64), compiled here by libseccomp:
    the trusted side of the boundary. No filter only for the ``filter="none"`` test relaxation,
    or, with ``allow_weak_isolation``, where libseccomp is missing."""
    if limits.filter == "none":
        return {}
    from components.tools.seccomp_policy import PolicyError, compile_filter

    try:
        return {role: base64.b64encode(compile_filter(role)).decode() for role in ("server", "episode")}
    except PolicyError as exc:
        if allow_weak_isolation:
            return {}
        raise _KernelGone("isolation_unavailable", str(exc)) from None


def _hello(limits: SandboxLimits, allow_weak_isolation: bool, op: str) -> dict[str, Any]:
    """The first message to a kernel: what it enforces itself."""
    from components.tools.seccomp_policy import NAMESPACE_FLAGS

    return {
        "op": op,
        "limits": {"memory_mb": limits.memory_mb, "cpu_s": limits.cpu_s, "output_bytes": limits.output_bytes},
        "isolation": {"filter": limits.filter, "namespaces": limits.namespaces, "raw_access": limits.raw_access},
        "filters": _filters(limits, allow_weak_isolation),
        "namespace_flags": NAMESPACE_FLAGS,
        "allow_weak_isolation": allow_weak_isolation,
    }


class SandboxServer:
    """A fork server for sandbox episodes: one long-lived kernel process forks a child per
    episode, prepared ahead of time with the same limits, unprivileged user and seccomp filter
    as a dedicated kernel (see :func:`components.tools._kernel._serve`). Starting an episode
    then costs about a millisecond instead of a fresh interpreter — what lets certification
    re-run one supporting program per candidate at a useful rate.

    One episode at a time: pass the server to :class:`SandboxEpisode` (``server=``) and close the
    episode before opening the next. Children are prepared before they are needed, so they all
    run with the server's ``limits`` (an episode with other limits is refused). The server
    process only ever runs the kernel's own code; a child that crashes, times out or corrupts
    the pipe costs a server restart, never a wrong result. Close it (or use ``with``) when done.
    """

    def __init__(self, limits: SandboxLimits = SandboxLimits(), *, allow_weak_isolation: bool = False) -> None:
        self.limits = limits
        self.allow_weak_isolation = allow_weak_isolation
        self._proc: subprocess.Popen[bytes] | None = None
        self._to: int | None = None
        self._from: int | None = None
        self.busy: SandboxEpisode | None = None
        self.restarts = 0
        self.episodes = 0
        self._pending_reap = False

    def _ensure(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        self.stop()
        self._proc, self._to, self._from = _spawn_kernel()
        _send_msg(self._to, _hello(self.limits, self.allow_weak_isolation, "serve"))
        ready = _recv_msg(self._from, time.monotonic() + self.limits.startup_timeout_s, 1 << 20)
        if not ready.get("ok") or not ready.get("server"):
            self.stop()
            raise _KernelGone("isolation_unavailable", f"the sandbox server did not start: {ready}")

    def fork(self, episode: SandboxEpisode, hello: Mapping[str, Any]) -> tuple[int, int]:
        """Hand ``episode`` the waiting child; returns the pipe ends it now owns (to, from)."""
        if self.busy is not None:
            raise RuntimeError("the sandbox server already runs an episode; close it first")
        mine = _hello(self.limits, self.allow_weak_isolation, "hello")
        if {k: hello.get(k) for k in mine} != mine:
            raise ValueError(
                "a forked episode runs with its server's limits and isolation; "
                "create the SandboxServer with the episode's SandboxLimits"
            )
        try:
            self._ensure()
            self._drain()
            if self._to is None:
                self._ensure()
            _send_msg(self._to, {**hello, "op": "fork"})
        except (OSError, TypeError) as exc:
            self.stop()
            raise _KernelGone("crashed", f"the sandbox server is gone: {exc}") from exc
        self.busy = episode
        self.episodes += 1
        return self._to, self._from  # type: ignore[return-value]

    def _drain(self) -> None:
        """Read the previous child's ``reaped`` report; anything unexpected restarts the server."""
        if not self._pending_reap:
            return
        self._pending_reap = False
        try:
            deadline = time.monotonic() + 5.0
            while _recv_msg(self._from, deadline, 1 << 24).get("op") != "reaped":
                pass
        except (_KernelGone, OSError, TypeError, ValueError) as exc:  # a confused pipe: start over
            import logging

            logging.getLogger(__name__).debug("sandbox server restarted: no clean 'reaped' report (%r)", exc)
            self.restarts += 1
            self.stop()

    def release(self, episode: SandboxEpisode, child_pid: int | None, *, reaped: bool) -> None:
        """End ``episode``'s child: ask it to close (or kill it); its ``reaped`` report is read
        before the next episode starts."""
        if self.busy is not episode:
            return
        self.busy = None
        if reaped:
            return
        if child_pid is not None and episode.alive:
            try:
                _send_msg(self._to, {"op": "close"})
            except OSError:
                self.stop()
                return
        elif child_pid is not None:
            try:
                os.kill(child_pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._pending_reap = True

    def stop(self) -> None:
        """End the server: it reaps its children (the spare, and the running episode, which is
        killed) before it exits, and is reaped here."""
        busy = self.busy
        child = busy._child_pid if busy is not None and not busy._reaped else None
        _terminate(self._proc, (self._to, self._from), child, kill_child=True)
        self._proc = self._to = self._from = None
        self.busy = None
        self._pending_reap = False

    close = stop

    def __enter__(self) -> SandboxServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __del__(self) -> None:
        try:
            self.stop()
        except (OSError, TypeError) as exc:  # a process or pipe already gone
            import logging

            logging.getLogger(__name__).debug("SandboxServer cleanup failed: %r", exc)


#: bytes that start a JSON value after the first: every value but the first follows one of them
_VALUE_MARKS = (b"[", b"{", b",", b":")


def _recv_msg(
    fd: int | None, deadline: float, max_bytes: int, max_values: int = SandboxLimits.max_message_values
) -> dict[str, Any]:
    """One message from the child, whose every byte is hostile. What reading it costs this process
    is bounded: at most ``max_bytes`` are read (into one buffer), and a message that could hold
    more than ``max_values`` JSON values (counted from the bytes that can start one, strings
    included, before anything is parsed) is refused, so parsing cannot build more objects than
    that whatever their shape (16 MiB of ``[]`` would otherwise be ~5.6 million lists, ~450 MB)."""

    def read(n: int) -> bytearray:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _KernelGone("timeout", "no reply from the sandbox in time")
            ready, _, _ = select.select([fd], [], [], min(left, MAX_TIMEOUT_S))
            if not ready:
                continue
            k = os.readv(fd, [view[got : got + (1 << 20)]])  # type: ignore[arg-type]
            if not k:
                raise _KernelGone("exited", "the sandbox process exited")
            got += k
        return buf

    (size,) = struct.unpack(">I", read(4))
    if size > max_bytes:
        raise _KernelGone("output_limit", f"the sandbox sent a {size}-byte message (limit {max_bytes})")
    data = read(size)
    if sum(data.count(mark) for mark in _VALUE_MARKS) >= max_values:
        raise _KernelGone("output_limit", f"the sandbox sent a message of more than {max_values} JSON values")
    try:
        msg = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _KernelGone("protocol_error", f"malformed message from the sandbox: {exc}") from exc
    except (RecursionError, MemoryError):
        raise _KernelGone("protocol_error", "a message from the sandbox nests too deeply") from None
    if not isinstance(msg, dict):
        raise _KernelGone("protocol_error", "malformed message from the sandbox")
    return msg


class SandboxEpisode:
    """One episode: a persistent interpreter, its traced results and its evidence.

    >>> # ep = SandboxEpisode(query_path); ep.run("r = cypher('MATCH (n) RETURN count(n)')")

    With ``server=`` (a :class:`SandboxServer`) the interpreter is a child forked by the server
    instead of a fresh process: same limits, privileges and filter, a much cheaper start.
    """

    def __init__(
        self,
        query_path: Any,
        *,
        schema: GraphSchema | None = None,
        limits: SandboxLimits = SandboxLimits(),
        episode_id: str | None = None,
        allow_weak_isolation: bool = False,
        server: SandboxServer | None = None,
    ) -> None:
        self.query_path = query_path
        self.schema = schema
        self.limits = limits
        self.episode_id = episode_id or uuid.uuid4().hex[:12]
        self.allow_weak_isolation = allow_weak_isolation
        self.registry: dict[str, TracedResult] = {}
        self.evidence: list[str] = []
        self.calls: list[dict[str, Any]] = []  # every tool call, in order, with its outcome
        self.isolation: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._to_child: int | None = None
        self._from_child: int | None = None
        self._dead: dict[str, str] | None = None
        self._counter = itertools.count(1)
        self._cell_new: list[TracedResult] = []
        self._server = server
        self._child_pid: int | None = None
        self._reaped = False
        self._awaiting_ready = False
        self._deadline = 0.0  # the running cell's wall-clock deadline (monotonic)
        self._bytes = 0  # result bytes held by this episode

    # -- process lifecycle -------------------------------------------------------------
    def _start(self) -> None:
        if self._server is not None:
            self._to_child, self._from_child = self._server.fork(
                self, _hello(self.limits, self.allow_weak_isolation, "hello")
            )
        else:
            self._proc, self._to_child, self._from_child = _spawn_kernel()
            self._send(_hello(self.limits, self.allow_weak_isolation, "hello"))
        self._awaiting_ready = True  # read after the first cell is sent: one round trip less

    def _await_ready(self) -> None:
        ready = self._recv(time.monotonic() + self.limits.startup_timeout_s)
        self._awaiting_ready = False
        if ready.get("op") != "ready" or not ready.get("ok"):
            raise _KernelGone("isolation_unavailable", str(ready.get("error")))
        self.isolation = ready.get("isolation")
        self._child_pid = ready.get("pid") if isinstance(ready.get("pid"), int) else None

    def _kill(self, *, idle: bool = False) -> None:
        """End the child and reap it (a dedicated kernel) or hand it back to its server. ``idle``:
        the child is between cells, so it ends by itself when its pipe closes; otherwise it may be
        running code and is killed at once."""
        if self._server is not None:
            server, self._server = self._server, None  # a forked episode is used once
            server.release(self, self._child_pid, reaped=self._reaped)
            self._to_child = self._from_child = None
            return
        proc, self._proc = self._proc, None
        fds, self._to_child, self._from_child = (self._to_child, self._from_child), None, None
        _terminate(proc, fds, self._child_pid, kill_child=not idle)

    def close(self) -> None:
        """End the episode; nothing of its processes is left afterwards (all reaped)."""
        self._kill(idle=self._dead is None)
        if self._dead is None:
            self._dead = {"code": "closed", "message": "the episode was closed"}

    def __enter__(self) -> SandboxEpisode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # never leave a child behind
        try:
            self._kill(idle=getattr(self, "_dead", None) is None)
        except (OSError, TypeError) as exc:  # a process or pipe already gone
            import logging

            logging.getLogger(__name__).debug("SandboxEpisode %s cleanup failed: %r", self.episode_id, exc)

    # -- wire ----------------------------------------------------------------------------
    def _send(self, msg: Mapping[str, Any], deadline: float | None = None) -> None:
        try:
            _send_msg(self._to_child, msg, deadline)
        except (BrokenPipeError, OSError, TypeError) as exc:
            raise self._gone() from exc

    def _recv(self, deadline: float) -> dict[str, Any]:
        try:
            msg = _recv_msg(self._from_child, deadline, self.limits.max_message_bytes, self.limits.max_message_values)
        except _KernelGone as gone:
            if gone.code == "timeout":
                raise _KernelGone(
                    "timeout", f"the cell exceeded its {self.limits.cell_timeout_s:g} s time limit"
                ) from None
            if gone.code == "exited":
                raise self._gone() from None
            raise
        if msg.get("op") == "reaped" and self._server is not None:  # the forked child ended
            self._reaped = True
            raise self._ended(msg.get("signal"), msg.get("exit"))
        return msg

    def _ended(self, sig: Any, code: Any) -> _KernelGone:
        if not (isinstance(sig, int) and sig > 0) and isinstance(code, int) and 128 < code < 160:
            sig = code - 128  # the kernel passes up "killed by signal n" as exit status 128 + n
        if isinstance(sig, int) and sig > 0:
            if sig == signal.SIGXCPU:
                return _KernelGone("cpu_limit", f"the episode exceeded its {self.limits.cpu_s} s CPU limit")
            if sig == signal.SIGSYS:
                return _KernelGone("forbidden_syscall", "the code attempted a forbidden system call")
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = f"signal {sig}"
            return _KernelGone("crashed", f"the sandbox process died ({name})")
        return _KernelGone("exited", f"the sandbox process exited (status {code})")

    def _gone(self) -> _KernelGone:
        if self._server is not None:
            return _KernelGone("crashed", "the sandbox server process died")
        code = self._proc.wait() if self._proc is not None else None
        if code is not None and code < 0:
            return self._ended(-code, None)
        return self._ended(None, code)

    # -- requests from the child ---------------------------------------------------------
    def _record(self, op: str, **info: Any) -> None:
        """Keep one call record. Their number is capped (``max_calls``: :meth:`run` refuses tool
        calls past it) and so is what each keeps, so records cannot grow this process."""
        err = info.get("error")
        if isinstance(err, dict):  # a refusal can quote the query: the message is cut
            info["error"] = _clean_error(err)
        self.calls.append({"op": op, "index": len(self.calls), **info})

    def _handle_cypher(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        query, params = msg.get("query"), msg.get("params") or {}
        if not isinstance(query, str) or not isinstance(params, dict):
            return {"ok": False, "error": {"code": "bad_request", "message": "cypher(query: str, **params)"}}
        # What the call's record keeps is charged to the episode's bytes: the query (the start of
        # one past the query path's length limit, which refuses it) and the parameters (none when
        # the query path refuses them: too large, too deep, not JSON-like).
        kept_query = query if len(query) <= MAX_QUERY_CHARS else query[:_RECORD_QUERY_CHARS] + "…"
        kept_params: dict[str, Any] | None = params
        try:
            check_params(params)
        except GraphError:
            kept_params = None
        cost = len(kept_query) + (json_size(kept_params) if kept_params is not None else 0)
        if self._bytes + cost > self.limits.max_episode_bytes:
            err = {
                "code": "query_limit",
                "message": f"the episode's results and queries passed {self.limits.max_episode_bytes} bytes",
            }
            self._record("cypher", query=query[:_RECORD_QUERY_CHARS], params=None, ok=False, error=err)
            return {"ok": False, "error": err}
        self._bytes += cost
        if len(self.registry) >= self.limits.max_queries:
            err = {"code": "query_limit", "message": f"at most {self.limits.max_queries} queries per episode"}
            self._record("cypher", query=kept_query, params=kept_params, ok=False, error=err)
            return {"ok": False, "error": err}
        start = time.perf_counter()
        left_ms = max(1, int((self._deadline - time.monotonic()) * 1000))
        try:
            res = self.query_path.run(query, params, limit=self.limits.max_rows, timeout_ms=left_ms)
        except GraphError as exc:
            err = exc.to_dict()
            self._record("cypher", query=kept_query, params=kept_params, ok=False, error=err)
            return {"ok": False, "error": err}
        size = sum(map(json_size, res.rows))
        if self._bytes + size > self.limits.max_episode_bytes:
            err = {
                "code": "query_limit",
                "message": f"the episode's results passed {self.limits.max_episode_bytes} bytes",
            }
            self._record("cypher", query=kept_query, params=kept_params, ok=False, error=err)
            return {"ok": False, "error": err}
        self._bytes += size
        traced = TracedResult.build(
            f"{self.episode_id}:q{next(self._counter)}",
            query,
            params,
            res.columns,
            res.rows,
            res.truncated,
            episode=self.episode_id,
        )
        self.registry[traced.id] = traced
        self._cell_new.append(traced)
        self._record(
            "cypher",
            query=query,
            params=params,
            ok=True,
            result_id=traced.id,
            row_count=traced.row_count,
            truncated=traced.truncated,
            elapsed_ms=round((time.perf_counter() - start) * 1e3, 3),
        )
        return {"ok": True, "result": traced.to_json()}

    def _handle_mark(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        claimed = msg.get("results")
        if not isinstance(claimed, list) or not claimed:
            return {"ok": False, "error": {"code": "bad_request", "message": "mark_evidence(*results)"}}
        ids = []
        for item in claimed:
            rid = item.get("id") if isinstance(item, dict) else None
            reg = self.registry.get(rid) if isinstance(rid, str) else None
            if reg is None:
                shown = _clip(repr(rid), 200)  # a forged id is anything the child sent
                err = {
                    "code": "forged_evidence",
                    "message": f"result {shown} was not produced by cypher() in this episode",
                }
                self._record("mark_evidence", ids=[shown], ok=False, error=err)
                return {"ok": False, "error": err}
            diff = reg.matches(item)
            if diff is not None:
                err = {"code": "tampered_evidence", "message": f"result {reg.id}: {diff}"}
                self._record("mark_evidence", ids=[reg.id], ok=False, error=err)
                return {"ok": False, "error": err}
            ids.append(reg.id)
        for rid in ids:
            if rid not in self.evidence:
                self.evidence.append(rid)
        self._record("mark_evidence", ids=list(dict.fromkeys(ids)), ok=True)
        return {"ok": True, "marked": ids}

    def _handle_schema(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        if self.schema is None:
            return {"ok": False, "error": {"code": "no_schema", "message": "no schema is available"}}
        self._record("select_schema", ok=True)
        return {"ok": True, "schema": {**self.schema.to_json(), "text": self.schema.to_text()}}

    _HANDLERS = {"cypher": _handle_cypher, "mark_evidence": _handle_mark, "schema": _handle_schema}

    # -- public --------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._dead is None

    def evidence_results(self) -> list[TracedResult]:
        return [self.registry[i] for i in self.evidence]

    def run(self, code: str) -> CellResult:
        """Run one cell of Python in the episode's interpreter."""
        start = time.monotonic()
        self._cell_new = []
        if self._dead is not None:
            return CellResult(
                False,
                error={"code": "episode_ended", "message": f"the episode already ended: {self._dead['message']}"},
                evidence=list(self.evidence),
                episode_alive=False,
            )
        if not isinstance(code, str):
            return CellResult(
                False, error={"code": "bad_request", "message": "code must be a string"}, evidence=list(self.evidence)
            )
        try:
            if self._to_child is None:
                self._start()
            self._send({"op": "run", "code": code}, time.monotonic() + self.limits.startup_timeout_s)
            if self._awaiting_ready:
                self._await_ready()
            deadline = self._deadline = time.monotonic() + self.limits.cell_timeout_s
            while True:
                msg = self._recv(deadline)
                op = msg.get("op")
                if op == "done":  # the child's output is cut here too: it is not trusted to have
                    err, out = msg.get("error"), msg.get("stdout", "")
                    stdout, cut = _cut_utf8(out if isinstance(out, str) else "", self.limits.output_bytes)
                    truncated = cut or msg.get("stdout_truncated") is True
                    return CellResult(
                        ok=err is None,
                        stdout=stdout,
                        stdout_truncated=truncated,
                        stdout_limit=self.limits.output_bytes if truncated else None,
                        error=_clean_error(err) if err is not None else None,
                        traced=list(self._cell_new),
                        evidence=list(self.evidence),
                        elapsed_s=time.monotonic() - start,
                    )
                handler = self._HANDLERS.get(op) if isinstance(op, str) else None
                if handler is None:
                    raise _KernelGone("protocol_error", f"unknown request {str(op)[:80]!r} from the sandbox")
                if time.monotonic() >= deadline:  # no new tool work once the cell's time is up
                    raise _KernelGone("timeout", f"the cell exceeded its {self.limits.cell_timeout_s:g} s time limit")
                if len(self.calls) >= self.limits.max_calls:  # neither run nor recorded
                    err = {"code": "call_limit", "message": f"at most {self.limits.max_calls} tool calls per episode"}
                    self._send({"ok": False, "error": err}, deadline)
                    continue
                try:
                    reply = handler(self, msg)
                except Exception as exc:  # a malformed request must not escape run()
                    detail = _clip(f"malformed {op} request: {type(exc).__name__}: {exc}", _ERROR_MESSAGE_CHARS)
                    raise _KernelGone("protocol_error", detail) from exc
                self._send(reply, deadline)
        except _KernelGone as gone:
            self._dead = {"code": gone.code, "message": gone.message}
            self._kill()
            return CellResult(
                False,
                error=dict(self._dead),
                traced=list(self._cell_new),
                evidence=list(self.evidence),
                episode_alive=False,
                elapsed_s=time.monotonic() - start,
            )
