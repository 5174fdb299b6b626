"""Certification throughput (no judge) vs. the raw re-execution of the same queries, same run.

On the academic demo graph (``--nodes``, default 50k) the template quizzer makes ``--candidates``
candidates; then, ``--reps`` times and alternating so both sides see the same machine:

* **floor** — every evidence query run once more, directly on a fresh read-only Ladybug
  connection (already prepared text, no checks): what certification cannot go below, since it
  must re-execute the evidence;
* **certify** — :func:`~components.certify.certifier.certify_many` on a fresh connection with
  every process-wide cache (parse, vetting, rewrites, derivations) cleared first: all four
  checks, the supporting program of each candidate re-run in a sandbox forked per candidate;
* **certify (warm)** — the same again without clearing the caches (query texts already seen,
  as when a pipeline re-certifies).

It also times the one-by-one path (:func:`~components.certify.certifier.certify`, a fresh
sandbox *process* per candidate) on a subset, which is what the fork server replaced, and
prints the CPU time of this process and of the sandbox processes per candidate.

Targets: certify ≥ 0.8× the floor's throughput and ≥ 200 candidates/s.

With ``--baseline DIR`` (a checkout of an earlier commit, e.g. ``git worktree add /tmp/base
<commit>``) it instead times ``certify_many`` of *that* tree against this one on the same graph and
the same candidates (this tree's template quizzer, written as JSONL), each in its own process,
alternating ``--reps`` times, and prints the throughput ratio — how a certifier change is measured.

    python benchmarks/certify.py [--nodes 50000] [--candidates 300] [--reps 3] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _clear_caches() -> None:
    from components.cypher import compat, features, parse, safety

    parse._lex.cache_clear()
    parse._parse.cache_clear()
    safety._VETTED.clear()
    compat._REWRITES.clear()
    features._derive.cache_clear()


def _cpu() -> tuple[float, float]:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=50_000)
    p.add_argument("--candidates", type=int, default=300)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--one-by-one", type=int, default=30, help="candidates for the one-by-one baseline")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--baseline", type=Path, default=None, help="a checkout of an earlier commit to compare with")
    args = p.parse_args()
    if args.baseline is not None:
        compare_with_baseline(args)
        return

    from components.certify import certify, certify_many
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.graph.sources import demo
    from components.quizzer.template import TemplateQuizzer
    from components.tools.traced import MAX_ROWS

    with tempfile.TemporaryDirectory(prefix="gd-certbench-") as tmp:
        db = Path(tmp) / "db"
        t0 = time.perf_counter()
        load_graph(demo.generate("academic", seed=args.seed, scale=args.nodes), db)
        print(f"graph: academic, scale {args.nodes}, built in {time.perf_counter() - t0:.1f} s")
        with LadybugBackend(db) as backend:
            schema = backend.schema()
            fingerprint = backend.fingerprint()
            print(f"  {schema.node_count} nodes, {schema.rel_count} relationships")
            t0 = time.perf_counter()
            cands = TemplateQuizzer(ReadOnlyQueryPath(backend, schema=schema), schema, seed=args.seed).generate(
                args.candidates
            )
            print(
                f"candidates: {len(cands)} template candidates in {time.perf_counter() - t0:.1f} s "
                f"({sum(len(c.evidence) for c in cands)} evidence queries, "
                f"{len({e['query'] for c in cands for e in c.evidence})} distinct texts)"
            )
        for c in cands:
            c.meta["snapshot_fingerprint"] = fingerprint
        prep = ReadOnlyQueryPath(LadybugBackend(db), schema=schema)
        work = [(prep.prepare(e["query"]), e["params"]) for c in cands for e in c.evidence]

        def floor() -> float:
            with LadybugBackend(db) as b:
                t = time.perf_counter()
                for text, params in work:
                    b.run(text, params, limit=MAX_ROWS)
                return time.perf_counter() - t

        def certify_all(cold: bool) -> tuple[float, list, tuple[float, float]]:
            if cold:
                _clear_caches()
            with LadybugBackend(db) as b:
                qp = ReadOnlyQueryPath(b, schema=schema)
                c0, t = _cpu(), time.perf_counter()
                certs = certify_many(cands, schema=schema, query_path=qp, current_fingerprint=fingerprint)
                wall = time.perf_counter() - t
                c1 = _cpu()
            return wall, certs, (c1[0] - c0[0], c1[1] - c0[1])

        floor()  # warm the OS page cache for both sides
        floors, colds, warms, cpus = [], [], [], []
        statuses = None
        for _ in range(args.reps):
            floors.append(floor())
            wall, certs, cpu = certify_all(cold=True)
            colds.append(wall)
            cpus.append(cpu)
            warms.append(certify_all(cold=False)[0])
            got = [(c.status, tuple(c.reasons)) for c in certs]
            assert statuses is None or got == statuses, "certification is not deterministic"
            statuses = got

        subset = cands[: args.one_by_one]
        with LadybugBackend(db) as b:
            qp = ReadOnlyQueryPath(b, schema=schema)
            t = time.perf_counter()
            for c in subset:
                certify(
                    c, schema=schema, query_path=qp, snapshot_fingerprint=fingerprint, current_fingerprint=fingerprint
                )
            one_by_one = (time.perf_counter() - t) / max(len(subset), 1)

    n = len(cands)
    f, c, w = statistics.median(floors), statistics.median(colds), statistics.median(warms)
    me, kids = statistics.median(x[0] for x in cpus), statistics.median(x[1] for x in cpus)
    counts = {s: sum(1 for st, _ in statuses if st == s) for s in ("strict", "partial", "hard_failure")}
    print(f"statuses: {counts}")
    print(f"{'':<26}{'median s':>10}{'cand/s':>10}{'vs floor':>10}")
    print(f"{'floor (raw re-execution)':<26}{f:>10.3f}{n / f:>10.1f}{1.0:>10.2f}")
    print(f"{'certify (cold caches)':<26}{c:>10.3f}{n / c:>10.1f}{f / c:>10.2f}")
    print(f"{'certify (warm caches)':<26}{w:>10.3f}{n / w:>10.1f}{f / w:>10.2f}")
    print(
        f"{'one by one (process/cand)':<26}{one_by_one * n:>10.3f}{1 / one_by_one:>10.1f}{f / (one_by_one * n):>10.2f}"
        f"   (measured on {len(subset)}, scaled)"
    )
    print(
        f"CPU per candidate (cold): this process {me / n * 1e3:.2f} ms, sandbox processes {kids / n * 1e3:.2f} ms; "
        f"floor {f / n * 1e3:.2f} ms wall"
    )
    print(
        f"targets: >= 0.8x floor -> {f / c:.2f}x cold / {f / w:.2f}x warm "
        f"({'met' if f / c >= 0.8 else 'NOT met'}); >= 200 cand/s -> {n / c:.0f} cold / {n / w:.0f} warm "
        f"({'met' if n / c >= 200 else 'NOT met'})"
    )


# Run in a child process with PYTHONPATH = the tree under test: certify the JSONL candidates on
# the graph once, caches cold, and print the wall time and the statuses.
_TIMED = """
import json, sys, time
from components.certify import certify_many
from components.cypher import compat, features, parse, safety
from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.ladybug import LadybugBackend
from components.quizzer.candidate import QACandidate
db, cands_path = sys.argv[1], sys.argv[2]
cands = [QACandidate.from_record(json.loads(line)) for line in open(cands_path)]
for clear in (parse._lex.cache_clear, parse._parse.cache_clear, safety._VETTED.clear, compat._REWRITES.clear,
              features._derive.cache_clear):
    clear()
with LadybugBackend(db) as b:
    schema = b.schema()
    qp = ReadOnlyQueryPath(b, schema=schema)
    fp = cands[0].meta["snapshot_fingerprint"]
    t = time.perf_counter()
    certs = certify_many(cands, schema=schema, query_path=qp, current_fingerprint=fp)
    wall = time.perf_counter() - t
print(json.dumps({"wall": wall, "statuses": [c.status for c in certs]}))
"""


def compare_with_baseline(args: argparse.Namespace) -> None:
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.graph.sources import demo
    from components.quizzer.template import TemplateQuizzer

    trees = {"baseline": args.baseline.resolve(), "this tree": ROOT}
    with tempfile.TemporaryDirectory(prefix="gd-certab-") as tmp:
        db, cands_path = Path(tmp) / "db", Path(tmp) / "cands.jsonl"
        load_graph(demo.generate("academic", seed=args.seed, scale=args.nodes), db)
        with LadybugBackend(db) as backend:
            schema = backend.schema()
            fingerprint = backend.fingerprint()
            cands = TemplateQuizzer(ReadOnlyQueryPath(backend, schema=schema), schema, seed=args.seed).generate(
                args.candidates
            )
        with cands_path.open("w") as fh:
            for c in cands:
                c.meta["snapshot_fingerprint"] = fingerprint
                fh.write(json.dumps(c.to_record(), default=str) + "\n")
        print(f"graph: academic, scale {args.nodes}; {len(cands)} candidates (this tree's template quizzer)")
        walls: dict[str, list[float]] = {name: [] for name in trees}
        statuses: dict[str, list[str]] = {}
        for _ in range(args.reps):
            for name, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": str(tree)}
                out = subprocess.run(
                    [sys.executable, "-c", _TIMED, str(db), str(cands_path)],
                    env=env,
                    cwd=tree,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                got = json.loads(out.stdout.strip().splitlines()[-1])
                walls[name].append(got["wall"])
                statuses[name] = got["statuses"]
    n = len(cands)
    print(f"{'':<12}{'median s':>10}{'cand/s':>10}   statuses")
    for name in trees:
        m = statistics.median(walls[name])
        counts = {s: statuses[name].count(s) for s in ("strict", "partial", "hard_failure")}
        print(f"{name:<12}{m:>10.3f}{n / m:>10.1f}   {counts}   runs {[round(w, 3) for w in walls[name]]}")
    ratio = statistics.median(walls["baseline"]) / statistics.median(walls["this tree"])
    print(f"throughput, this tree / baseline: {ratio:.3f}x")


if __name__ == "__main__":
    main()
