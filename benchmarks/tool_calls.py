"""Per-call overhead of the agent tools vs. calling the backend directly, same graph, same run.

On the 50k-node academic demo graph it times, for the same sampled operations:

* ``backend.run`` directly (the floor),
* the read-only query path (parse + safety + schema check + dialect rewrite, cached),
* ``cypher()`` from inside the sandbox (child process, pipe round trip, traced result + hash),
* the Graph-CoT API (``NeighbourCheck``, ``NodeFeature``, ``NodeDegree``) through the query path,

and prints p50/p95 per call and each one's p50 ratio to the direct backend call; then the
sandbox's start-up: a dedicated kernel process per episode, and an episode forked by a
:class:`~components.tools.sandbox.SandboxServer` (create, run ``pass``, close).

With ``--baseline DIR`` (a checkout of an earlier commit) the same measurements run for that tree
and for this one, each in its own process, alternating ``--reps`` times, and the medians and the
ratios this tree / baseline are printed — how a sandbox change is measured.

    python benchmarks/tool_calls.py [--nodes 50000] [--calls 600] [--baseline DIR --reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(os.environ.get("GRAPHDOJO_TREE") or Path(__file__).resolve().parents[1])
sys.path.insert(0, str(ROOT))


def _stats(samples: list[float]) -> tuple[float, float]:
    return statistics.median(samples), statistics.quantiles(samples, n=20)[18]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=50_000)
    p.add_argument("--calls", type=int, default=600)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--starts", type=int, default=60, help="episodes started per start-up measurement")
    p.add_argument("--json", action="store_true", help="print one JSON line of medians (for --baseline)")
    p.add_argument("--baseline", type=Path, default=None, help="a checkout of an earlier commit to compare with")
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    if args.baseline is not None:
        compare_with_baseline(args)
        return

    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.graph.sources import demo
    from components.tools.graph_cot import GraphCoT
    from components.tools.sandbox import SandboxEpisode, SandboxLimits, SandboxServer

    with tempfile.TemporaryDirectory(prefix="gd-toolbench-") as tmp:
        data = demo.generate("academic", seed=args.seed, scale=args.nodes)
        load_graph(data, Path(tmp) / "db")
        rng = random.Random(args.seed)
        papers = [r["id"] for r in data.nodes["Paper"].rows]
        picks = [rng.choice(papers) for _ in range(args.calls)]
        del data
        backend = LadybugBackend(Path(tmp) / "db")
        schema = backend.schema()
        path = ReadOnlyQueryPath(backend, schema=schema)
        api = GraphCoT(backend, query_path=path)
        q = "MATCH (p:Paper {id: $id})-[:CITES]->(c:Paper) RETURN c.id"

        def timed(fn, items) -> list[float]:
            for it in items[:50]:
                fn(it)
            out = []
            for it in items:
                t0 = time.perf_counter_ns()
                fn(it)
                out.append((time.perf_counter_ns() - t0) / 1e3)
            return out

        results = {
            "backend.run (floor)": timed(lambda i: backend.run(q, {"id": i}, limit=200), picks),
            "query path": timed(lambda i: path.run(q, {"id": i}, limit=200), picks),
        }
        with SandboxEpisode(
            path, schema=schema, limits=SandboxLimits(cell_timeout_s=600, cpu_s=3600, max_queries=10**6)
        ) as ep:
            ep.run("ids = []")
            code = f"for i in ids_batch:\n    cypher({q!r}, id=i)"
            # one cell per batch of calls; per-call time = cell time / batch size
            per_call = []
            batch = 20
            for k in range(0, len(picks), batch):
                chunk = picks[k : k + batch]
                t0 = time.perf_counter_ns()
                res = ep.run(f"ids_batch = {chunk!r}\n" + code)
                assert res.ok, res.error
                per_call.extend([(time.perf_counter_ns() - t0) / 1e3 / len(chunk)] * len(chunk))
            results["sandbox cypher()"] = per_call
            starts = []
            for _ in range(args.starts):
                t0 = time.perf_counter_ns()
                with SandboxEpisode(path, schema=schema) as one:
                    assert one.run("pass").ok
                starts.append((time.perf_counter_ns() - t0) / 1e3)
            results["episode start (process)"] = starts
            with SandboxServer() as srv:
                starts = []
                for _ in range(args.starts + 10):
                    t0 = time.perf_counter_ns()
                    with SandboxEpisode(path, schema=schema, server=srv) as one:
                        assert one.run("pass").ok
                    starts.append((time.perf_counter_ns() - t0) / 1e3)
                results["episode start (fork server)"] = starts[10:]
        results["Graph-CoT NeighbourCheck"] = timed(lambda i: api.call("NeighborCheck", (i, "CITES")), picks)
        results["Graph-CoT NodeFeature"] = timed(lambda i: api.call("NodeFeature", (i, "title")), picks)
        results["Graph-CoT NodeDegree"] = timed(lambda i: api.call("NodeDegree", (i, "CITES")), picks)
        backend.close()

    if args.json:
        print(json.dumps({name: _stats(samples)[0] for name, samples in results.items()}))
        return
    floor = _stats(results["backend.run (floor)"])[0]
    print(f"{args.nodes:,}-node academic graph, {args.calls} calls each (µs per call)")
    print(f"{'tool':<28}{'p50':>10}{'p95':>10}{'p50 / floor':>14}")
    for name, samples in results.items():
        p50, p95 = _stats(samples)
        print(f"{name:<28}{p50:>10.0f}{p95:>10.0f}{p50 / floor:>13.2f}x")


def compare_with_baseline(args: argparse.Namespace) -> None:
    trees = {"baseline": args.baseline.resolve(), "this tree": Path(__file__).resolve().parents[1]}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.reps):
        for name, tree in trees.items():
            env = {**os.environ, "GRAPHDOJO_TREE": str(tree), "PYTHONPATH": str(tree)}
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--json",
                    "--nodes",
                    str(args.nodes),
                    "--calls",
                    str(args.calls),
                    "--starts",
                    str(args.starts),
                    "--seed",
                    str(args.seed),
                ],
                env=env,
                cwd=tree,
                capture_output=True,
                text=True,
                check=True,
            )
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{args.nodes:,}-node academic graph; medians over {args.reps} alternating runs per tree (µs)")
    print(f"{'measure':<30}{'baseline':>12}{'this tree':>12}{'ratio':>8}")
    for key in runs["this tree"][0]:
        b = statistics.median(r[key] for r in runs["baseline"])
        t = statistics.median(r[key] for r in runs["this tree"])
        print(f"{key:<30}{b:>12.0f}{t:>12.0f}{t / b:>8.2f}")


if __name__ == "__main__":
    main()
