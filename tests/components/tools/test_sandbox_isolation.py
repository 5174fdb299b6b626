"""Each isolation layer of the sandbox, proven on its own with the others relaxed, and the parent
that no child can stall — real kernel filter, real namespaces, real processes, real database.

Raw system calls need an FFI inside the episode, which production episodes never have: these
tests use the ``raw_access`` relaxation (``ctypes`` loaded into the episode) and assert that the
*effect* did not happen — a file not created, a process still alive, no shared memory on the
host, an affinity unchanged — not merely that a call returned an error.
"""

from __future__ import annotations

import os
import platform
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from components.cypher.query_path import MAX_RESULT_BYTES, ReadOnlyQueryPath
from components.graph.ladybug import LadybugBackend
from components.tools.sandbox import SandboxEpisode, SandboxLimits, SandboxServer

LIMITS = SandboxLimits(cell_timeout_s=5.0, cpu_s=20, memory_mb=384, output_bytes=4000)
RAW = replace(LIMITS, raw_access=True)

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="Linux x86_64 / aarch64")


@pytest.fixture(scope="module")
def qp(tmp_path_factory: pytest.TempPathFactory):
    from components.graph.load import load_graph
    from tests.conftest import contract_graph

    path = tmp_path_factory.mktemp("isolation") / "db"
    load_graph(contract_graph(), path)
    with LadybugBackend(path) as b:
        yield ReadOnlyQueryPath(b, schema=b.schema())


@pytest.fixture()
def victim():
    """A process of the parent's uid that no episode may signal, schedule or trace."""
    proc = subprocess.Popen(["sleep", "120"])
    yield proc
    proc.kill()
    proc.wait()


def _nr(name: str) -> int:
    import pyseccomp

    return pyseccomp.resolve_syscall(pyseccomp.system_arch(), name)


def _run(qp, code: str, limits: SandboxLimits = RAW, server: SandboxServer | None = None):
    with SandboxEpisode(qp, schema=qp.schema, limits=limits, server=server) as ep:
        return ep.run(code), ep.isolation


def _denied(qp, call: str, *, limits: SandboxLimits = RAW) -> str:
    """Run ``libc.syscall(...)`` in an episode: 'denied' when it failed with EPERM / ENOSYS."""
    code = (
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"r = libc.syscall({call})\nerr = ctypes.get_errno()\n"
        "print('denied' if r == -1 and err in (1, 38) else f'ran {r} {err}')"
    )
    res, _ = _run(qp, code, limits)
    return res.stdout.strip() if res.ok else f"error {res.error}"


def _shm_ids() -> set[str]:
    return {line.split()[1] for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:] if line.strip()}


# -- the allow-list filter, family by family -------------------------------------------------

TMP = "/tmp/gd_isolation_probe"
# (family, syscall call text): each must be refused by the filter.
FAMILIES = {
    "files: openat": f"{_nr('openat')}, -100, b'/etc/passwd', 0",
    "files: creat": f"{_nr('creat')}, b'{TMP}', 0o600"
    if platform.machine() == "x86_64"
    else f"{_nr('openat')}, -100, b'{TMP}', 0o101, 0o600",
    "files: mkdirat": f"{_nr('mkdirat')}, -100, b'{TMP}.d', 0o700",
    "files: symlinkat": f"{_nr('symlinkat')}, b'/etc/passwd', -100, b'{TMP}.l'",
    "files: renameat2": f"{_nr('renameat2')}, -100, b'/tmp', -100, b'/tmp2', 0",
    "files: truncate": f"{_nr('truncate')}, b'/etc/hostname', 0",
    "files: statx (probe a path)": f"{_nr('statx')}, -100, b'/etc/shadow', 0, 0xfff, ctypes.create_string_buffer(256)",
    "files: newer syscall fchmodat2": "452, -100, b'/tmp', 0o777, 0",
    "chmod/chown: fchownat": f"{_nr('fchownat')}, -100, b'/tmp', 0, 0, 0",
    "chmod/chown: fchmod": f"{_nr('fchmod')}, 1, 0o777",
    "xattrs: setxattr": f"{_nr('setxattr')}, b'/tmp', b'user.x', b'1', 1, 0",
    "xattrs: newer syscall setxattrat": "463, -100, b'/tmp', 0, b'user.x', 0, 0",
    "handles: name_to_handle_at": f"{_nr('name_to_handle_at')}, -100, b'/etc', ctypes.create_string_buffer(256), ctypes.byref(ctypes.c_int()), 0",
    "sockets: socket": f"{_nr('socket')}, 2, 1, 0",
    "sockets: socketpair": f"{_nr('socketpair')}, 1, 1, 0, ctypes.create_string_buffer(8)",
    "processes: clone (a thread)": f"{_nr('clone')}, 0x00010f00, 0, 0, 0, 0",
    "processes: clone3": f"{_nr('clone3')}, ctypes.create_string_buffer(88), 88",
    "processes: execve": f"{_nr('execve')}, b'/bin/true', None, None",
    "processes: execveat": f"{_nr('execveat')}, -100, b'/bin/true', None, None, 0",
    "signals: tgkill": f"{_nr('tgkill')}, 1, 1, 9",
    "signals: pidfd_open": f"{_nr('pidfd_open')}, 1, 0",
    "signals: fcntl F_SETOWN": f"{_nr('fcntl')}, 4, 8, 1",
    "signals: fcntl F_SETSIG": f"{_nr('fcntl')}, 4, 10, 9",
    "ipc: shmget": f"{_nr('shmget')}, 0, 1 << 26, 0o1600",
    "ipc: msgget": f"{_nr('msgget')}, 0, 0o1600",
    "ipc: semget": f"{_nr('semget')}, 0, 1, 0o1600",
    "ipc: mq_open": f"{_nr('mq_open')}, b'gdq', 0o100 | 2, 0o600, None",
    "ipc: memfd_create": f"{_nr('memfd_create')}, b'x', 0",
    "scheduling: sched_setattr": f"{_nr('sched_setattr')}, 1, ctypes.create_string_buffer(56), 0",
    "scheduling: ioprio_set": f"{_nr('ioprio_set')}, 1, 1, 0",
    "mounts: mount": f"{_nr('mount')}, b'none', b'/tmp', b'tmpfs', 0, None",
    "mounts: fsopen": f"{_nr('fsopen')}, b'tmpfs', 0",
    "mounts: open_tree": f"{_nr('open_tree')}, -100, b'/', 1",
    "namespaces: unshare": f"{_nr('unshare')}, 0x20000000 | 0x08000000",
    "namespaces: setns": f"{_nr('setns')}, 0, 0",
    "io_uring: io_uring_setup": f"{_nr('io_uring_setup')}, 8, ctypes.create_string_buffer(120)",
    "bpf": f"{_nr('bpf')}, 0, ctypes.create_string_buffer(72), 72",
    "perf": f"{_nr('perf_event_open')}, ctypes.create_string_buffer(128), 0, -1, -1, 0",
    "userfaultfd": f"{_nr('userfaultfd')}, 0",
    "keyrings: add_key": f"{_nr('add_key')}, b'user', b'k', b'v', 1, -3",
    "ptrace: PTRACE_TRACEME": f"{_nr('ptrace')}, 0, 0, 0, 0",
    "ptrace: process_vm_readv": f"{_nr('process_vm_readv')}, 1, None, 0, None, 0, 0",
    "memory: mmap PROT_EXEC": f"{_nr('mmap')}, 0, 4096, 7, 0x22, -1, 0",
    "memory: mprotect PROT_EXEC": f"{_nr('mprotect')}, 0, 4096, 4",
    "prctl: PR_SET_DUMPABLE": f"{_nr('prctl')}, 4, 1, 0, 0, 0",
    "prctl: PR_SET_PTRACER any": f"{_nr('prctl')}, 0x59616d61, -1, 0, 0, 0",
    "ioctl: TIOCSTI": f"{_nr('ioctl')}, 0, 0x5412, ctypes.byref(ctypes.c_char(b'x'))",
    "limits: raise RLIMIT_AS": f"{_nr('prlimit64')}, 0, 9, ctypes.create_string_buffer(b'\\xff' * 16), None",
    "identity: setuid(0)": f"{_nr('setuid')}, 0",
    "time: settimeofday": f"{_nr('settimeofday')}, ctypes.create_string_buffer(16), None",
    "unknown future syscall": "470, 0, 0, 0",
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_filter_refuses(qp, family: str) -> None:
    assert _denied(qp, FAMILIES[family]) == "denied"
    for leftover in (TMP, TMP + ".d", TMP + ".l"):
        assert not os.path.lexists(leftover)


def test_the_filter_kills_other_abis(qp) -> None:
    """A call through the x32 ABI (x86_64 numbers with bit 30 set) or another architecture's
    convention is not a call the filter knows: the process is killed."""
    if platform.machine() != "x86_64":
        pytest.skip("the x32 ABI exists on x86_64 only")
    res, _ = _run(qp, "ctypes.CDLL(None).syscall(0x40000000 | 39)")
    assert not res.ok and res.error["code"] == "forbidden_syscall"


def test_ordinary_programs_still_run(qp) -> None:
    """What the quizzer's programs and ordinary computation need is allowed."""
    code = (
        "import json, math, re, collections, itertools, statistics, random, hashlib, datetime\n"
        "r = cypher('MATCH (p:Person) RETURN p.name AS name, p.age AS age ORDER BY name')\n"
        "ages = [row[1] for row in r.rows]\nrandom.seed(3)\n"
        "print(json.dumps({'mean': statistics.mean(ages), 'n': len(r), 'sqrt': math.isqrt(99),"
        " 'm': re.findall('[A-Z]', 'aBcD'), 'c': collections.Counter('aab').most_common(1),"
        " 'p': len(list(itertools.permutations(range(4)))), 'h': hashlib.sha1(b'x').hexdigest()[:6],"
        " 'r': random.randint(1, 9), 'd': datetime.date(2024, 1, 1).isoformat()}))\n"
        "big = [list(range(1000)) for _ in range(3000)]\nprint(sum(map(len, big)))\nmark_evidence(r)"
    )
    res, iso = _run(qp, code, LIMITS)
    assert res.ok, res.error
    assert '"mean": 39' in res.stdout and "3000000" in res.stdout
    assert iso.startswith("seccomp allow-list") and "pid+ipc namespaces" in iso and "no raw-access modules" in iso


# -- no raw-access modules ---------------------------------------------------------------------


def test_no_raw_access_module_is_in_the_episode(qp) -> None:
    """Nothing that gives raw memory or system-call access is loaded — not by name, not in any
    object the process holds, not as a class reachable from ``object.__subclasses__()`` — and
    none can be loaded, even through the real import machinery."""
    code = (
        "g = cypher.__globals__\nsys, gc = g['sys'], g['gc']\nraw = set(g['RAW_ACCESS_MODULES'])\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in raw or m == '_gd_isolate')\n"
        "mods = sorted(o.__name__ for o in gc.get_objects() if type(o).__name__ == 'module'"
        " and o.__name__.split('.')[0] in raw)\n"
        "seen, todo, types = set(), [object], []\n"
        "while todo:\n    t = todo.pop()\n    for s in type.__subclasses__(t):\n"
        "        if s not in seen:\n            seen.add(s); todo.append(s)\n"
        "            if s.__module__.split('.')[0] in raw:\n                types.append(s.__name__)\n"
        "imp = sys.modules['builtins'].__import__\nloadable = []\nfor m in sorted(raw):\n"
        "    try:\n        imp(m); loadable.append(m)\n    except BaseException:\n        pass\n"
        "print(loaded, mods, sorted(set(types)), loadable, 'ctypes' in g)"
    )
    res, _ = _run(qp, code, LIMITS)
    assert res.ok, res.error
    assert res.stdout == "[] [] [] [] False\n"


# -- namespaces and uids -----------------------------------------------------------------------


def test_namespaces_hold_with_a_permissive_filter(qp, victim) -> None:
    """With no seccomp filter at all, the namespaces alone: a 64 MB SysV segment the episode makes
    never reaches the host and is gone with it; processes outside cannot be signalled, scheduled
    or even seen."""
    before = _shm_ids()
    affinity = os.sched_getaffinity(victim.pid)
    code = (
        "libc = ctypes.CDLL(None, use_errno=True)\nos = cypher.__globals__['os']\n"
        f"shm = libc.syscall({_nr('shmget')}, 0, 1 << 26, 0o1600)\n"
        f"kill = libc.syscall({_nr('kill')}, {victim.pid}, 9); kill_err = ctypes.get_errno()\n"
        f"aff = libc.syscall({_nr('sched_setaffinity')}, {victim.pid}, 8, ctypes.byref(ctypes.c_ulong(1)))\n"
        "aff_err = ctypes.get_errno()\n"
        "print(shm >= 0, kill, kill_err, aff, aff_err, os.getpid(), os.getppid())"
    )
    res, iso = _run(qp, code, replace(RAW, filter="none"))
    assert res.ok, res.error
    shm_ok, kill, kill_err, aff, aff_err, pid, ppid = res.stdout.split()
    assert shm_ok == "True"  # it could make one: only the namespace stands in the way
    assert (kill, kill_err, aff, aff_err) == ("-1", "3", "-1", "3")  # ESRCH: not visible
    assert (pid, ppid) == ("1", "0")  # PID 1 of its own PID namespace: its parent is outside it
    assert "pid+ipc namespaces" in iso and "seccomp" not in iso
    assert victim.poll() is None and os.sched_getaffinity(victim.pid) == affinity
    assert _shm_ids() == before  # never visible on the host, gone with the episode


def test_the_filter_holds_without_namespaces(qp, victim) -> None:
    """With the namespaces off, the filter alone refuses the same calls: no segment appears and
    the process outside is untouched."""
    before = _shm_ids()
    affinity = os.sched_getaffinity(victim.pid)
    limits = replace(RAW, namespaces=False)
    assert _denied(qp, f"{_nr('shmget')}, 0, 1 << 26, 0o1600", limits=limits) == "denied"
    assert _denied(qp, f"{_nr('kill')}, {victim.pid}, 9", limits=limits) == "denied"
    assert (
        _denied(qp, f"{_nr('sched_setaffinity')}, {victim.pid}, 8, ctypes.byref(ctypes.c_ulong(1))", limits=limits)
        == "denied"
    )
    assert _denied(qp, f"{_nr('setpriority')}, 0, {victim.pid}, 19", limits=limits) == "denied"
    assert victim.poll() is None and os.sched_getaffinity(victim.pid) == affinity
    assert os.getpriority(os.PRIO_PROCESS, victim.pid) == 0
    assert _shm_ids() == before


def test_concurrent_episodes_have_distinct_uids_and_leave_nothing(qp) -> None:
    import psutil

    me = psutil.Process()
    baseline = {p.pid for p in me.children(recursive=True)}
    with (
        SandboxEpisode(qp, limits=LIMITS) as a,
        SandboxEpisode(qp, limits=LIMITS) as b,
        SandboxServer(LIMITS) as srv,
        SandboxEpisode(qp, limits=LIMITS, server=srv) as c,
    ):
        uids = [int(ep.run("print(cypher.__globals__['os'].getuid())").stdout) for ep in (a, b, c)]
    assert len(set(uids)) == 3 and min(uids) >= 100_000
    time.sleep(0.2)
    assert {p.pid for p in me.children(recursive=True)} <= baseline  # every process of every episode is gone


# -- a parent that cannot be stalled ---------------------------------------------------------------


def _finishes(fn, within_s: float):
    box: list = []
    t = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    start = time.monotonic()
    t.start()
    t.join(within_s)
    assert not t.is_alive(), f"the parent was stalled for more than {within_s} s"
    return box[0], time.monotonic() - start


def test_a_child_that_never_reads_its_reply_cannot_stall_the_parent(qp) -> None:
    limits = replace(LIMITS, cell_timeout_s=2.0)
    big = "UNWIND range(1, 200) AS x RETURN x, '" + "y" * 2000 + "' AS pad"  # ~400 kB, far past a pipe
    code = f"g = cypher.__globals__\ng['_send']({{'op': 'cypher', 'query': {big!r}, 'params': {{}}}})\nwhile True:\n    pass"
    for server in (None, SandboxServer(limits)):
        (res, _), took = _finishes(lambda server=server: _run(qp, code, limits, server), 15)
        assert not res.ok and res.error["code"] == "timeout" and took < 8
        if server:
            server.stop()


def test_hostile_messages_are_error_results(qp) -> None:
    """A message nested a hundred thousand levels deep, an oversized length, a non-object: each a
    clean protocol error, never an exception out of run()."""
    for payload in ("b'[' * 100000 + b']' * 100000", "b'\"just a string\"'", "b'\\xff\\xfe'"):
        code = (
            f"g = cypher.__globals__\np = {payload}\n"
            "g['os'].write(g['_RESP_FD'], g['struct'].pack('>I', len(p)) + p)\nwhile True:\n    pass"
        )
        res, _ = _run(qp, code, LIMITS)
        assert not res.ok and res.error["code"] in ("protocol_error", "timeout"), res.error
    code = "g = cypher.__globals__\ng['os'].write(g['_RESP_FD'], g['struct'].pack('>I', 2 ** 31))"
    res, _ = _run(qp, code, LIMITS)
    assert res.error["code"] == "output_limit"


def test_a_slow_query_ends_with_the_cell(qp) -> None:
    limits = replace(LIMITS, cell_timeout_s=2.0)
    slow = (
        "UNWIND range(1, 100000) AS a UNWIND range(1, 100000) AS b WITH a, b WHERE (a * b) % 7 = 3 RETURN count(*) AS n"
    )
    (res, _), took = _finishes(lambda: _run(qp, f"cypher({slow!r})", limits), 20)
    assert not res.ok and took < 6, (res.error, took)  # not the backend's own 30 s


def test_result_bytes_are_capped_per_result_and_per_episode(qp) -> None:
    huge = "UNWIND range(1, 600000) AS x RETURN collect(x) AS xs"  # one row of ~4 MB
    res, _ = _run(qp, f"r = cypher({huge!r})\nprint(r.row_count, r.truncated)", LIMITS)
    assert res.ok and res.stdout == "0 True\n"  # cut at MAX_RESULT_BYTES, flagged truncated
    step = MAX_RESULT_BYTES // 10  # ~200 kB per result: the episode's 16 MiB run out after ~80
    rows = "UNWIND range(1, 100) AS x RETURN x, '" + "z" * (step // 100) + "' AS pad"
    code = f"n = 0\nwhile True:\n    cypher({rows!r} + ' // ' + str(n))\n    n += 1"
    res, _ = _run(qp, code, replace(LIMITS, max_queries=1000))
    assert not res.ok and "query_limit" in res.error["message"], res.error


def test_parameters_are_bounded(qp) -> None:
    res, _ = _run(qp, "cypher('RETURN size($xs) AS n', xs=list(range(300000)))", LIMITS)
    assert not res.ok and "larger than" in res.error["message"]
