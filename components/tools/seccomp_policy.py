"""The sandbox's system-call policy: an **allow-list**, compiled by libseccomp in the trusted
parent and installed by the kernel before any user code runs.

Everything not listed fails with ``EPERM`` — including system calls added to Linux after this list
was written (``fchmodat2``, ``setxattrat``, …), which is what a deny-list missed. libseccomp (the
reference implementation, through the ``pyseccomp`` ctypes binding to the system's
``libseccomp.so.2``) resolves names per architecture and emits the architecture check: a call
from another ABI — on x86_64 that includes the x32 ABI (numbers with bit 30 set) — kills the
process.

The list is what the kernel process makes *after* its filter is installed while running real
programs: ``benchmarks/syscalls.py`` traces a corpus (template-quizzer and external-style final
programs, and a tour of every module the sandbox lets code import) under ``strace`` and compares
what it sees with this list. Two filters:

* :data:`EPISODE_SYSCALLS` + :data:`EPISODE_RULES` — the process that runs user code: compute,
  allocate memory (never executable), read and write its two pipes, read the clock and random
  bytes, exit. ``fcntl``, ``ioctl``, ``prctl``, ``prlimit64`` and the memory calls are allowed
  only with argument filters: no ``F_SETOWN`` / ``F_SETSIG`` / ``F_SETOWN_EX`` (signal another
  process on I/O), only ``TCGETS`` for ``ioctl``, only ``PR_SET_NAME`` / ``PR_GET_NAME`` for
  ``prctl``, ``prlimit64`` only to *read* one's own limits, no ``PROT_EXEC`` mapping.
* :data:`SERVER_EXTRA` — added for the kernel's own trusted part (the fork server and a dedicated
  kernel before it forks the episode): ``clone`` with exactly the flags of a fork into the
  per-episode namespaces (or of a plain ``fork()``), ``wait4``, ``pipe2``, dropping to the
  episode's uid, setting the child's limits and signal disposition, and installing the child's
  filter. Filters stack: the episode's
  filter, installed in the child under the server's, removes all of these again.
"""

from __future__ import annotations

import errno
import functools
import tempfile
from typing import Any, Final

__all__ = [
    "EPISODE_RULES",
    "EPISODE_SYSCALLS",
    "NAMESPACE_FLAGS",
    "SERVER_EXTRA",
    "SERVER_RULES",
    "PolicyError",
    "compile_filter",
    "policy_text",
]

# -- the episode (user code) ----------------------------------------------------------------
EPISODE_SYSCALLS: Final = (
    "read",
    "write",
    "readv",
    "writev",
    "close",  # its two pipes (fds 3 and 4)
    "munmap",
    "brk",
    "mremap",
    "madvise",  # memory (mmap / mprotect: below)
    "futex",
    "sched_yield",  # locks inside the interpreter
    "getrandom",  # random.seed(), hashlib
    "clock_gettime",
    "clock_getres",
    "gettimeofday",
    "time",
    "clock_nanosleep",
    "nanosleep",
    "getpid",
    "gettid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "rt_sigreturn",
    "rt_sigprocmask",
    "restart_syscall",  # signals to itself (SIGXCPU, SIGSEGV)
    "fstat",  # by descriptor only (never a path)
    "exit",
    "exit_group",
)
_PROT_EXEC: Final = 0x4
_F_GETFD, _F_SETFD, _F_GETFL, _F_SETFL, _F_DUPFD_CLOEXEC = 1, 2, 3, 4, 1030
_TCGETS: Final = 0x5401
_PR_SET_NAME, _PR_GET_NAME, _PR_SET_SECCOMP, _PR_SET_NO_NEW_PRIVS, _PR_SET_PDEATHSIG = 15, 16, 22, 38, 1

#: ``(system call, [(argument index, operator, value[, mask])], …)``: allowed when every
#: comparison holds; several entries for one call are alternatives. Operators: ``eq``,
#: ``masked_eq`` (``arg & mask == value``).
EPISODE_RULES: Final = (
    ("mmap", [(2, "masked_eq", 0, _PROT_EXEC)]),
    ("mprotect", [(2, "masked_eq", 0, _PROT_EXEC)]),
    *(("fcntl", [(1, "eq", cmd)]) for cmd in (_F_GETFD, _F_SETFD, _F_GETFL, _F_SETFL, _F_DUPFD_CLOEXEC)),
    ("ioctl", [(1, "eq", _TCGETS)]),
    *(("prctl", [(0, "eq", opt)]) for opt in (_PR_SET_NAME, _PR_GET_NAME)),
    ("prlimit64", [(0, "eq", 0), (2, "eq", 0)]),  # getrlimit: own process, no new limit
)

# -- the kernel's trusted part --------------------------------------------------------------
#: ``unshare`` flags of a per-episode isolation: its own PID and IPC namespaces.
NAMESPACE_FLAGS: Final = 0x20000000 | 0x08000000  # CLONE_NEWPID | CLONE_NEWIPC
_FORK_FLAGS: Final = 0x01000000 | 0x00200000 | 17  # CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD
SERVER_EXTRA: Final = ("wait4", "pipe2", "setresuid", "setresgid", "setgroups", "seccomp", "rt_sigaction")
_CLONE_NEWUSER: Final = 0x10000000  # added when the kernel is not root (a user namespace first)
_SIGCHLD: Final = 17
SERVER_RULES: Final = (
    ("clone", [(0, "eq", _FORK_FLAGS)]),  # fork() (namespaces off, a test relaxation)
    ("clone", [(0, "eq", NAMESPACE_FLAGS | _SIGCHLD)]),  # an episode into its own namespaces
    ("clone", [(0, "eq", NAMESPACE_FLAGS | _CLONE_NEWUSER | _SIGCHLD)]),
    ("prlimit64", [(0, "eq", 0)]),  # the child sets its own limits
    *(("prctl", [(0, "eq", opt)]) for opt in (_PR_SET_SECCOMP, _PR_SET_NO_NEW_PRIVS, _PR_SET_PDEATHSIG)),
)


class PolicyError(OSError):
    """libseccomp is missing or cannot compile the policy on this machine."""


def _seccomp() -> Any:
    try:
        import pyseccomp
    except (ImportError, OSError) as exc:  # no libseccomp.so.2: pyseccomp fails at import
        raise PolicyError(f"libseccomp is not available ({exc}); install libseccomp2") from None
    return pyseccomp


def _rules(role: str) -> list[tuple[str, list[tuple]]]:
    rules = [(name, []) for name in EPISODE_SYSCALLS] + [(n, list(a)) for n, a in EPISODE_RULES]
    if role == "server":
        rules += [(name, []) for name in SERVER_EXTRA] + [(n, list(a)) for n, a in SERVER_RULES]
    return rules


def _build(role: str) -> Any:
    if role not in ("episode", "server"):
        raise ValueError(f"unknown filter role {role!r}")
    sc = _seccomp()
    ops = {"eq": sc.EQ, "masked_eq": sc.MASKED_EQ}
    try:
        f = sc.SyscallFilter(sc.ERRNO(errno.EPERM))
        f.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
        for name, args in _rules(role):  # masked_eq: libseccomp takes (mask, value)
            f.add_rule(
                sc.ALLOW,
                name,
                *[sc.Arg(i, ops[op], *((mask[0], value) if mask else (value, 0))) for i, op, value, *mask in args],
            )
    except OSError as exc:
        raise PolicyError(f"libseccomp could not compile the sandbox policy: {exc}") from exc
    return f


def _export(f: Any, method: str) -> bytes:
    with tempfile.TemporaryFile() as fh:
        getattr(f, method)(fh)
        fh.seek(0)
        return fh.read()


@functools.lru_cache(maxsize=4)
def compile_filter(role: str = "episode") -> bytes:
    """The BPF program (raw ``struct sock_filter`` array) of the ``episode`` or ``server`` filter
    for this machine's architecture."""
    program = _export(_build(role), "export_bpf")
    if not program or len(program) % 8:
        raise PolicyError("libseccomp produced no filter program")
    return program


def policy_text(role: str = "episode") -> str:
    """The filter in libseccomp's readable pseudo-filter code (for review and the docs)."""
    return _export(_build(role), "export_pfc").decode()
