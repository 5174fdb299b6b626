"""The sandbox contains hostile code, keeps evidence unforgeable, and the parent survives.

Every test runs real code in the real child process against a real Ladybug database through
the real read-only query path; the database fingerprint is checked unchanged afterwards.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.ladybug import LadybugBackend
from components.tools.sandbox import MAX_TIMEOUT_S, SandboxEpisode, SandboxLimits, SandboxServer
from components.tools.traced import result_hash

LIMITS = SandboxLimits(cell_timeout_s=3.0, cpu_s=10, memory_mb=384, output_bytes=2000)


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory):
    from components.graph.load import load_graph
    from tests.conftest import contract_graph

    path = tmp_path_factory.mktemp("sandbox") / "db"
    load_graph(contract_graph(), path)
    with LadybugBackend(path) as b:
        yield b


@pytest.fixture(scope="module")
def fingerprint(backend) -> str:
    return backend.fingerprint()


@pytest.fixture(scope="module")
def server():
    with SandboxServer(LIMITS) as srv:
        yield srv


@pytest.fixture(params=["process", "forked"])
def episode(request, backend, fingerprint, server):
    """Every episode test runs twice: in a dedicated kernel process and in a child of the fork
    server (the same server across tests, so a test that kills its child also proves the server
    recovers for the next one)."""
    srv = server if request.param == "forked" else None
    ep = SandboxEpisode(
        ReadOnlyQueryPath(backend, schema=backend.schema()), schema=backend.schema(), limits=LIMITS, server=srv
    )
    yield ep
    ep.close()
    assert srv is None or srv.busy is None
    assert backend.fingerprint() == fingerprint  # the graph is never changed


def test_persistent_interpreter_traced_results_and_evidence(episode) -> None:
    r1 = episode.run("r = cypher('MATCH (p:Person) WHERE p.age > $min RETURN p.name AS name ORDER BY name', min=30)")
    assert r1.ok, r1.error
    assert episode.isolation and episode.isolation.startswith("seccomp")
    (t,) = r1.traced
    assert t.columns == ("name",) and t.rows == (("Ann",), ("Bob",), ("Dan",))
    assert t.ordered and not t.truncated and t.params == {"min": 30}
    r2 = episode.run("print(len(r), r.rows[0][0]); mark_evidence(r)")
    assert r2.ok and r2.stdout == "3 Ann\n"
    assert r2.evidence == [t.id] and episode.evidence_results() == [t]


def test_select_schema_shows_directions(episode) -> None:
    res = episode.run("s = select_schema(); print(s['text'])")
    assert res.ok
    assert "(:Person)-[:WORKS_AT {since: INT64}]->(:Company)" in res.stdout


def test_truncation_keeps_200_rows_and_fetches_one_more(episode) -> None:
    res = episode.run(
        "a = cypher('UNWIND range(1, 200) AS x RETURN x')\n"
        "b = cypher('UNWIND range(1, 201) AS x RETURN x')\n"
        "print(a.row_count, a.truncated, b.row_count, b.truncated)"
    )
    assert res.ok and res.stdout == "200 False 200 True\n"


def test_hash_is_multiset_for_unordered_and_sequence_for_ordered(episode) -> None:
    res = episode.run(
        "u1 = cypher('UNWIND [3, 1, 2] AS x RETURN x')\n"
        "u2 = cypher('UNWIND [1, 2, 3] AS x RETURN x')\n"
        "o1 = cypher('UNWIND [3, 1, 2] AS x RETURN x ORDER BY x')\n"
        "o2 = cypher('UNWIND [3, 1, 2] AS x RETURN x ORDER BY x DESC')\n"
        "print(u1.result_hash == u2.result_hash, o1.result_hash == o2.result_hash, u1.ordered, o1.ordered)"
    )
    assert res.ok and res.stdout == "True False False True\n"
    assert result_hash(["x"], [[1], [2]], False) == result_hash(["x"], [[2], [1]], False)


# What code can reach through the kernel's own objects (``cypher.__globals__``: os, sys, gc, the
# real builtins) — refused by the filter, the namespaces and the uid; ctypes is not there at all.
G = "g = cypher.__globals__\nos, sys = g['os'], g['sys']\n"
HOSTILE = {
    "shell": G + "assert os.system('touch /tmp/gd_pwned_shell') == 0, 'shell denied'",
    "subprocess_import": "import subprocess",
    "subprocess_via_internals": G + "os.execv('/bin/sh', ['sh', '-c', 'touch /tmp/gd_pwned_exec'])",
    "file_read": "print(open('/etc/passwd').read())",
    "file_read_internals": G + "print(os.open('/etc/passwd', 0))",
    "file_write_internals": G + "os.open('/tmp/gd_pwned_write', 0o101)",
    "list_directory": G + "print(os.listdir('/'))",
    "stat_a_path": G + "print(os.stat('/etc/passwd'))",
    "fork": G + "os.fork()",
    "kill_parent": G + "os.kill(os.getppid(), 9)",
    "kill_init": G + "os.kill(1, 9)\nos.kill(2, 9)",
    "no_ctypes_in_globals": "ctypes = cypher.__globals__['ctypes']",
    "real_import_of_ctypes": G + "sys.modules['builtins'].__import__('ctypes')",
    "real_import_of_socket": G + "sys.modules['builtins'].__import__('socket')",
    "real_import_of_mmap": G + "sys.modules['builtins'].__import__('mmap')",
    "reach_database": G + "sys.path.append(" + repr(str(Path(os.__file__).parent)) + " + '/site-packages')\n"
    "sys.modules['builtins'].__import__('ladybug')",
    "raise_limits": G + "g['_apply_limits'](100000, 100000)",
    "sys_exit": "raise SystemExit(3)",
    "recursion": "def f(n):\n    return f(n + 1)\nf(0)",
    "memory_bomb": "x = bytearray(2 ** 33)",
    "still_root": G + "assert os.getuid() == 0, 'not root'",
    "priority_of_parent": G + "os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)",
    "affinity_of_init": G + "os.sched_setaffinity(1, {0})",
    "become_root": G + "os.setuid(0)",
    "chroot": G + "os.chroot('/')",
    "unshare_again": G + "g['_unshare'](0x20000000)",
    "install_nothing": G + "g['_install_filter'](b'')",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_code_is_contained(episode, name: str) -> None:
    res = episode.run(HOSTILE[name])
    assert not res.ok, f"{name} was not refused: {res}"
    assert res.error and res.error["code"] and res.error["message"]
    # the episode's interpreter survives errors raised inside it
    assert episode.run("print('alive')").stdout == "alive\n"
    for leftover in ("/tmp/gd_pwned_shell", "/tmp/gd_pwned_exec", "/tmp/gd_pwned_write"):
        assert not os.path.exists(leftover)


def test_malformed_protocol_messages_end_the_episode_cleanly(episode) -> None:
    assert episode.run("r = cypher('RETURN 1 AS one')").ok
    res = episode.run(
        "send = mark_evidence.__globals__['_request']\n"
        "send({'op': 'mark_evidence', 'results': [{'id': r.id, 'query': r.query, 'params': {}, 'columns': 5, 'rows': [], 'truncated': False, 'result_hash': r.result_hash}]})"
    )
    assert not res.ok and res.error["code"] in {"tampered_evidence", "protocol_error"}
    res = episode.run("mark_evidence.__globals__['_send']({'op': ['x']})\nprint('after')")
    assert not res.ok and res.error["code"] == "protocol_error" and not res.episode_alive


def test_nan_results_can_be_evidence(episode) -> None:
    res = episode.run("r = cypher('RETURN 0.0 / 0.0 AS x')\nmark_evidence(r)")
    assert res.ok, res.error
    assert len(episode.evidence) == 1


def test_environment_is_empty(episode, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_PASSWORD", "secret")
    res = episode.run("print(sorted(cypher.__globals__['os'].environ))")
    # nothing is inherited; only the locale Python itself sets (PEP 538 coercion) may appear
    assert res.ok and res.stdout in {"[]\n", "['LC_CTYPE']\n"}


def test_infinite_loop_ends_the_episode_with_timeout(episode) -> None:
    res = episode.run("while True:\n    pass")
    assert not res.ok and res.error["code"] == "timeout" and not res.episode_alive
    after = episode.run("print(1)")
    assert after.error["code"] == "episode_ended"


def test_hard_crash_ends_the_episode_cleanly(backend) -> None:
    raw = SandboxLimits(**{**LIMITS.__dict__, "raw_access": True})
    with SandboxEpisode(ReadOnlyQueryPath(backend), limits=raw) as ep:
        res = ep.run("ctypes.string_at(0)")  # a segfault (ctypes only with the test relaxation)
    assert not res.ok and res.error["code"] == "crashed" and not res.episode_alive


def test_raw_exit_ends_the_episode_cleanly(episode) -> None:
    res = episode.run("cypher.__globals__['os']._exit(7)")
    assert res.error == {"code": "exited", "message": "the sandbox process exited (status 7)"}


def test_huge_output_is_capped(episode) -> None:
    res = episode.run("print('y' * 10**6)\ncypher.__globals__['os'].write(1, b'z' * 10**6)")
    assert res.ok and res.stdout_truncated and len(res.stdout) == LIMITS.output_bytes
    assert res.stdout_limit == LIMITS.output_bytes
    assert f"output truncated at {LIMITS.output_bytes} bytes" in res.observation()


def test_output_is_capped_in_utf8_bytes_and_any_text_can_be_printed(episode) -> None:
    """The cap is in bytes, never inside a character; a lone surrogate (no UTF-8 writer takes
    it: it used to end the episode) prints as "?"; output under the cap is not flagged."""
    res = episode.run("print('é' * 10**4)")
    assert res.ok and res.stdout_truncated and res.stdout == "é" * (LIMITS.output_bytes // 2)
    res = episode.run("print('a\\ud800b', 'ü')")
    assert res.ok and res.stdout == "a?b ü\n" and not res.stdout_truncated and res.stdout_limit is None
    assert episode.alive and "truncated" not in res.observation()


@pytest.mark.parametrize("seconds", [1e10, MAX_TIMEOUT_S + 0.5, math.inf, math.nan, 0, -1])
def test_a_timeout_past_the_maximum_is_a_clear_error(seconds: float) -> None:
    """Not clamped: refused when the limits are made, so the parent's waits never overflow."""
    with pytest.raises(ValueError, match=f"seconds > 0 and <= {MAX_TIMEOUT_S:g}"):
        SandboxLimits(cell_timeout_s=seconds)
    with pytest.raises(ValueError, match="startup_timeout_s"):
        SandboxLimits(startup_timeout_s=seconds)
    assert SandboxLimits(cell_timeout_s=MAX_TIMEOUT_S).cell_timeout_s == MAX_TIMEOUT_S


# A fresh interpreter is the parent: its peak RSS (ru_maxrss, this process only) before and after
# hostile cells shows what reading from an episode costs it.
_READ_BOUND = r"""
import json, resource, sys
from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.ladybug import LadybugBackend
from components.tools.sandbox import SandboxEpisode, SandboxLimits

G = "g = cypher.__globals__\n"
CASES = {
    "print_300_mb": "print('x' * 300_000_000)",
    "many_writes": "for _ in range(300):\n    print('x' * 1_000_000)",
    "forged_reply": G + "g['_send']({'op': 'done', 'stdout': 'y' * 7_000_000, 'stdout_truncated': False,"
    " 'error': {'code': 'c' * 100_000, 'message': 'm' * 7_000_000, 'extra': list(range(100_000))}})",
    "many_values": G + "g['_send']({'op': 'done', 'stdout': '', 'error': {'code': [[]] * 4_000_000}})",
    "failing_queries": "q = 'RETURN 1 AS x /*' + 'a' * 5_000_000\nn = 0\nwhile True:\n"
    "    try:\n        cypher(q + str(n))\n    except Exception:\n        n += 1",
    "refused_parameters": "p = list(range(400_000))\nwhile True:\n    try:\n        cypher('RETURN 1 AS x', p=p)\n"
    "    except Exception:\n        pass",
}


def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


limits = SandboxLimits(cell_timeout_s=3.0)
out = {}
with LadybugBackend(sys.argv[1]) as backend:
    qp = ReadOnlyQueryPath(backend)
    with SandboxEpisode(qp, limits=limits) as ep:
        assert ep.run("print(1)").ok
    base = peak()
    for name, code in CASES.items():
        with SandboxEpisode(qp, limits=limits) as ep:
            res = ep.run(code)
            out[name] = {
                "result": res.to_json(),
                "observation": res.observation()[-60:],
                "calls": len(ep.calls),
                "call_bytes": len(json.dumps(ep.calls, default=str)),
                "growth": peak() - base,
            }
print(json.dumps(out))
"""
READ_BOUND_BYTES = 256 << 20  # docs/sandbox.md: what reading from an episode may cost the parent


def test_what_the_parent_reads_from_an_episode_is_bounded(tmp_path: Path) -> None:
    """Printed output, forged replies, messages of millions of values and endless refused calls:
    each result is cut and flagged, and the parent's peak RSS grows by less than the bound."""
    from components.graph.load import load_graph
    from tests.conftest import contract_graph

    load_graph(contract_graph(), tmp_path / "db")
    proc = subprocess.run(
        [sys.executable, "-c", _READ_BOUND, str(tmp_path / "db")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parents[3],
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    cap = SandboxLimits().output_bytes
    for name in ("print_300_mb", "many_writes"):
        res = out[name]["result"]
        assert res["ok"] and res["stdout_truncated"] and res["stdout_limit"] == cap, name
        assert len(res["stdout"].encode()) == cap and out[name]["observation"].endswith(
            f"…(output truncated at {cap} bytes)"
        )
    forged = out["forged_reply"]["result"]
    assert forged["stdout_truncated"] and len(forged["stdout"].encode()) == cap
    assert set(forged["error"]) == {"code", "message"} and len(forged["error"]["code"]) <= 64
    assert len(forged["error"]["message"]) <= 4000
    assert out["many_values"]["result"]["error"]["code"] == "output_limit"
    for name in ("failing_queries", "refused_parameters"):  # refused calls keep small records
        assert out[name]["result"]["error"]["code"] == "timeout", out[name]["result"]
        assert 0 < out[name]["calls"] <= SandboxLimits().max_calls and out[name]["call_bytes"] < 2 << 20, name
    growth = {name: case["growth"] for name, case in out.items()}
    assert max(growth.values()) < READ_BOUND_BYTES, growth


# The parent of whatever it runs (prctl PR_SET_CHILD_SUBREAPER): any process orphaned below it is
# re-parented here instead of to init, so a kernel or an episode that was not reaped shows up.
_REAPER = r"""
import ctypes, json, os, sys, time
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
exec(sys.argv[1])
time.sleep(0.5)
left = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    except OSError:
        continue
    if fields.get("PPid", "").strip() == str(os.getpid()):
        left.append([int(pid), fields["Name"].strip(), fields["State"].strip()])
print(json.dumps(left))
"""


def reaper(body: str, *args: str, cwd: Path | None = None) -> list:
    """Run ``body`` as a subreaper; the processes left below it afterwards (none, if all was reaped)."""
    proc = subprocess.run(
        [sys.executable, "-c", _REAPER, body, *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_closing_reaps_every_process_of_an_episode(tmp_path: Path) -> None:
    """A clean close, a cell killed on its timeout, a fork server's episodes and the server itself:
    afterwards no process is left, not even an exited, unreaped one (a zombie)."""
    from components.graph.load import load_graph
    from tests.conftest import contract_graph

    load_graph(contract_graph(), tmp_path / "db")
    body = (
        "from components.cypher.query_path import ReadOnlyQueryPath\n"
        "from components.graph.ladybug import LadybugBackend\n"
        "from components.tools.sandbox import SandboxEpisode, SandboxLimits, SandboxServer\n"
        "limits = SandboxLimits(cell_timeout_s=1.0, cpu_s=10, memory_mb=384)\n"
        "with LadybugBackend(sys.argv[2]) as b:\n"
        "    qp = ReadOnlyQueryPath(b)\n"
        "    for code, ok in (('print(1)', True), ('while True: pass', False)):\n"
        "        with SandboxEpisode(qp, limits=limits) as ep:\n"
        "            assert ep.run(code).ok is ok\n"
        "    with SandboxServer(limits) as srv:\n"
        "        for code, ok in (('print(1)', True), ('while True: pass', False), ('print(2)', True)):\n"
        "            with SandboxEpisode(qp, limits=limits, server=srv) as ep:\n"
        "                assert ep.run(code).ok is ok\n"
    )
    assert reaper(body, str(tmp_path / "db"), cwd=Path(__file__).parents[3]) == []


def test_cpu_limit(backend) -> None:
    limits = SandboxLimits(cell_timeout_s=30, cpu_s=1)
    with SandboxEpisode(ReadOnlyQueryPath(backend), limits=limits) as ep:
        res = ep.run("n = 0\nwhile True:\n    n += 1")
    assert res.error["code"] == "cpu_limit"


FORGERIES = {
    "hand_built": "t = TracedResult(id=r.id, query=r.query, params=r.params, columns=r.columns, rows=r.rows, row_count=r.row_count, truncated=r.truncated, ordered=r.ordered, result_hash=r.result_hash)\nmark_evidence(t)",
    "plain_list": "mark_evidence([('Ann',)])",
    "subclass": "class T(TracedResult):\n    __slots__ = ()\nmark_evidence(T(**{k: getattr(r, k) for k in TracedResult.__slots__}))",
    "copied": "import copy\nmark_evidence(copy.copy(r))",
    "pickled": "cls, args = r.__reduce_ex__(2)[:2]\nmark_evidence(cls(*args))",
    "deep_copied": "import copy\nmark_evidence(copy.deepcopy(r))",
    "edited_rows": "object.__setattr__(r, 'rows', (('Zed',),))\nmark_evidence(r)",
    "edited_hash_and_rows": "object.__setattr__(r, 'rows', (('Zed',),)); object.__setattr__(r, 'result_hash', '0' * 32)\nmark_evidence(r)",
    "registered_forgery": "t = TracedResult(id=r.id, query=r.query, params=r.params, columns=r.columns, rows=(('Zed',),), row_count=1, truncated=False, ordered=False, result_hash=r.result_hash)\nmark_evidence.__globals__['_GENUINE'][id(t)] = (t, r.id)\nmark_evidence(t)",
    "other_episode_id": "t = TracedResult(id='someone-else:q1', query=r.query, params=r.params, columns=r.columns, rows=r.rows, row_count=r.row_count, truncated=False, ordered=False, result_hash=r.result_hash)\nmark_evidence.__globals__['_GENUINE'][id(t)] = (t, t.id)\nmark_evidence(t)",
    "raw_protocol_message": "send = mark_evidence.__globals__['_request']\nsend({'op': 'mark_evidence', 'results': [{'id': 'x:q9', 'rows': []}]})",
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_forged_or_tampered_evidence_is_rejected(episode, name: str) -> None:
    assert episode.run("r = cypher('MATCH (p:Person) RETURN p.name AS n')").ok
    res = episode.run(FORGERIES[name])
    assert not res.ok
    assert episode.evidence == []


def test_evidence_from_another_episode_is_rejected(backend) -> None:
    path = ReadOnlyQueryPath(backend)
    with SandboxEpisode(path, limits=LIMITS) as a, SandboxEpisode(path, limits=LIMITS) as b:
        assert a.run("r = cypher('RETURN 1 AS one')").ok
        stolen = a.registry[next(iter(a.registry))].to_json()
        res = b.run(
            f"t = TracedResult(**{{**{stolen!r}, 'columns': ('one',), 'rows': ((1,),)}})\n"
            "mark_evidence.__globals__['_GENUINE'][id(t)] = (t, t.id)\nmark_evidence(t)"
        )
        assert res.error["code"] == "forged_evidence" and b.evidence == []


UNSAFE = [
    "CREATE (:City {id: 'x'})",
    "MATCH (p:Person) SET p.age = 1",
    "MATCH (p:Person) DETACH DELETE p",
    "LOAD FROM '/etc/passwd' (file_format='csv') RETURN *",
    "LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l",
    "CALL db.labels()",
    "MATCH (n) RETURN n; MATCH (m) DELETE m",
]


@pytest.mark.parametrize("query", UNSAFE)
def test_unsafe_cypher_is_an_error_result(episode, query: str) -> None:
    res = episode.run(f"cypher({query!r})")
    assert not res.ok
    assert res.error["code"] in {"unsafe_query", "syntax_error"}, res.error
    assert episode.calls[-1]["ok"] is False


def test_fork_server_isolates_episodes_from_each_other(backend) -> None:
    """State an episode leaves behind — globals, patched builtins, patched modules — is gone in
    the next episode of the same server; the server survives crashes, timeouts and exits."""
    qp = ReadOnlyQueryPath(backend, schema=backend.schema())
    with SandboxServer(LIMITS) as srv:
        with SandboxEpisode(qp, limits=LIMITS, server=srv) as a:
            res = a.run(
                "import string, math\nsecret = 42\n__builtins__['len'] = None\nmath.pi = 3\nstring.digits = 'forged'"
            )
            assert res.ok, res.error
        for code, error in (
            ("import ctypes", "exception"),
            ("while True: pass", "timeout"),
            ("raise SystemExit(3)", "exit"),
            ("open('/etc/passwd')", "exception"),
        ):
            with SandboxEpisode(qp, limits=LIMITS, server=srv) as hostile:
                r = hostile.run(code)
                assert not r.ok and r.error["code"] == error, r.error
        with SandboxEpisode(qp, limits=LIMITS, server=srv) as b:
            res = b.run(
                "import string, math\nprint(globals().get('secret'), math.pi, string.digits, len('ab'))\n"
                "mark_evidence(cypher('MATCH (p:Person) RETURN count(p) AS n'))"
            )
            assert res.ok, res.error
            assert res.stdout == "None 3.141592653589793 0123456789 2\n"
            assert b.isolation.startswith("seccomp") and len(b.evidence) == 1
        assert srv.episodes == 6 and srv.busy is None


def test_fork_server_child_crash_is_reported_like_a_process_crash(backend) -> None:
    qp = ReadOnlyQueryPath(backend, schema=backend.schema())
    with SandboxServer(LIMITS) as srv:
        for _ in range(2):
            with SandboxEpisode(qp, limits=LIMITS, server=srv) as ep:
                r = ep.run("import ctypes\n")  # not importable: a plain error, episode alive
                assert not r.ok and ep.alive
                r = ep.run("x = [1] * (10 ** 10)")
                assert not r.ok and r.error["code"] == "memory_limit"
                r = ep.run("print('still here')")
                assert r.ok and r.stdout == "still here\n"
        with pytest.raises(ValueError, match="limits"):
            SandboxEpisode(qp, limits=SandboxLimits(cpu_s=1), server=srv).run("print(1)")
        assert srv.busy is None
    cpu = SandboxLimits(cell_timeout_s=20, cpu_s=1)
    with SandboxServer(cpu) as srv:
        with SandboxEpisode(qp, limits=cpu, server=srv) as ep:
            r = ep.run("while True: pass")
            assert not r.ok and r.error["code"] == "cpu_limit" and not ep.alive
        with SandboxEpisode(qp, limits=cpu, server=srv) as ep:
            assert ep.run("print(1)").stdout == "1\n"
