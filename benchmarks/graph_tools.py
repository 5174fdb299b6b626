"""Graph-CoT-style tool operations: our read-only query path over Ladybug vs. the in-memory
Python dict that Graph-CoT and GraphDancer load (``graph.json``), same graphs, same run.

For each size it generates the academic demo graph, loads it into Ladybug, writes the Graph-CoT
``graph.json`` form, and runs each side in its own process (so peak resident memory is each
side's own): neighbours of a node by relationship type, one feature of a node, degree by type.
It prints p50/p95 latency per operation, the latency ratio, and peak RSS of each side.

Targets: p50 < 1 ms per call on both sizes; RSS(db) <= 0.2 x RSS(dict) at >= 1M edges.

    python benchmarks/graph_tools.py                # 50k nodes and >= 1M edges
    python benchmarks/graph_tools.py --sizes small  # a quick smoke run
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = {"small": {"nodes": 5_000}, "50k": {"nodes": 50_000}, "1m": {"edges": 1_000_000}}


def _rss_mb() -> float:
    """Peak resident set of this process image (VmHWM; ru_maxrss would include the memory of
    the parent at fork time, since Linux keeps it across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# -- preparation (parent process) ----------------------------------------------------------
def prepare(size: str, workdir: Path, n_ops: int, seed: int) -> dict[str, Any]:
    from components.graph.load import load_graph
    from components.graph.sources import demo

    target = SIZES[size]
    if "edges" in target:
        scale = demo.scale_for_edges("academic", target["edges"])
    else:
        scale = target["nodes"]  # the generator's scale is the approximate node count
    t0 = time.perf_counter()
    data = demo.generate("academic", seed=seed, scale=scale)
    t_gen = time.perf_counter() - t0
    t0 = time.perf_counter()
    load_graph(data, workdir / "db", overwrite=True)
    t_load = time.perf_counter() - t0

    # Graph-CoT graph.json: {"<label>_nodes": {id: {"features": {...}, "neighbors": {type: [ids]}}}}
    graph: dict[str, dict[str, Any]] = {}
    for label, ns in data.nodes.items():
        bucket = graph.setdefault(f"{label.lower()}_nodes", {})
        for row in ns.rows:
            feats = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items() if k != "id"}
            bucket[row["id"]] = {"features": feats, "neighbors": {}}
    for rtype, rs in data.rels.items():
        for r in rs.rows:
            src = graph[f"{r.src_label.lower()}_nodes"][r.src_id]["neighbors"]
            dst = graph[f"{r.dst_label.lower()}_nodes"][r.dst_id]["neighbors"]
            src.setdefault(rtype, []).append(r.dst_id)
            dst.setdefault(f"{rtype}_by", []).append(r.src_id)
    with (workdir / "graph.json").open("w") as fh:
        json.dump(graph, fh)

    rng = random.Random(seed)
    out_types: dict[str, list[str]] = {}
    for rtype, rs in data.rels.items():
        for src_label in {r.src_label for r in rs.rows[:1000]}:
            out_types.setdefault(src_label, []).append(rtype)
    ops = []
    labels = [lb for lb in data.nodes if lb in out_types]
    for i in range(n_ops):
        label = rng.choice(labels)
        row = rng.choice(data.nodes[label].rows)
        kind = ("neighbours", "feature", "degree")[i % 3]
        if kind == "feature":
            feature = rng.choice([k for k in data.nodes[label].properties if k != "id"])
            ops.append({"kind": kind, "label": label, "id": row["id"], "feature": feature})
        else:
            ops.append({"kind": kind, "label": label, "id": row["id"], "type": rng.choice(out_types[label])})
    (workdir / "ops.json").write_text(json.dumps(ops))
    return {
        "nodes": data.node_count,
        "edges": data.rel_count,
        "generate_s": round(t_gen, 2),
        "load_s": round(t_load, 2),
        "graph_json_mb": round((workdir / "graph.json").stat().st_size / 1e6, 1),
        "db_mb": round((workdir / "db" / "graph.lbug").stat().st_size / 1e6, 1),
    }


# -- workers (child processes) -------------------------------------------------------------
def worker_db(workdir: Path) -> dict[str, Any]:
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend, quote_identifier

    ops = json.loads((workdir / "ops.json").read_text())
    base = _rss_mb()
    backend = LadybugBackend(workdir / "db")
    path = ReadOnlyQueryPath(backend, schema=backend.schema())

    def call(op: dict[str, Any]) -> Any:
        n = f"(n:{quote_identifier(op['label'])} {{id: $id}})"
        if op["kind"] == "feature":
            q = f"MATCH {n} RETURN n.{quote_identifier(op['feature'])}"
            return path.run(q, {"id": op["id"]}).rows
        rel = quote_identifier(op["type"])
        if op["kind"] == "neighbours":
            return path.run(f"MATCH {n}-[:{rel}]->(m) RETURN m.id", {"id": op["id"]}).rows
        return path.run(f"MATCH {n}-[:{rel}]->(m) RETURN count(m)", {"id": op["id"]}).rows

    return _time_ops(ops, call, base)


def worker_dict(workdir: Path) -> dict[str, Any]:
    ops = json.loads((workdir / "ops.json").read_text())
    base = _rss_mb()
    with (workdir / "graph.json").open() as fh:
        graph = json.load(fh)

    def call(op: dict[str, Any]) -> Any:
        node = graph[f"{op['label'].lower()}_nodes"][op["id"]]
        if op["kind"] == "feature":
            return node["features"].get(op["feature"])
        neigh = node["neighbors"].get(op["type"], [])
        return list(neigh) if op["kind"] == "neighbours" else len(neigh)

    return _time_ops(ops, call, base)


def _time_ops(ops: list[dict[str, Any]], call: Any, base_rss: float) -> dict[str, Any]:
    for op in ops[:200]:  # warm-up (caches, buffer pool)
        call(op)
    lat: dict[str, list[float]] = {}
    for op in ops:
        t0 = time.perf_counter_ns()
        call(op)
        lat.setdefault(op["kind"], []).append((time.perf_counter_ns() - t0) / 1e3)
    out = {
        kind: {
            "p50_us": statistics.median(v),
            "p95_us": statistics.quantiles(v, n=20)[18],
            "n": len(v),
        }
        for kind, v in lat.items()
    }
    return {"ops": out, "peak_rss_mb": _rss_mb(), "import_rss_mb": base_rss}


def _run_worker(kind: str, workdir: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", kind, "--workdir", str(workdir)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{kind} worker failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="50k,1m", help=f"comma list of {sorted(SIZES)}")
    p.add_argument("--ops", type=int, default=3000, help="operations per side (split over 3 kinds)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--worker", choices=["db", "dict"], help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        fn = worker_db if args.worker == "db" else worker_dict
        print(json.dumps(fn(Path(args.workdir))))
        return

    results = {}
    for size in args.sizes.split(","):
        with tempfile.TemporaryDirectory(prefix=f"gd-bench-{size}-") as tmp:
            workdir = Path(tmp)
            info = prepare(size, workdir, args.ops, args.seed)
            db = _run_worker("db", workdir)
            dct = _run_worker("dict", workdir)
        print(
            f"\n== {size}: {info['nodes']:,} nodes, {info['edges']:,} edges "
            f"(generate {info['generate_s']} s, load {info['load_s']} s; "
            f"graph.json {info['graph_json_mb']} MB, graph.lbug {info['db_mb']} MB)"
        )
        print(
            f"{'operation':<12}{'db p50 µs':>11}{'db p95 µs':>11}"
            f"{'dict p50 µs':>13}{'dict p95 µs':>13}{'p50 ratio':>11}"
        )
        rows = {}
        for kind in ("neighbours", "feature", "degree"):
            a, b = db["ops"][kind], dct["ops"][kind]
            ratio = a["p50_us"] / max(b["p50_us"], 1e-9)
            rows[kind] = {"db": a, "dict": b, "p50_ratio": ratio}
            print(
                f"{kind:<12}{a['p50_us']:>11.1f}{a['p95_us']:>11.1f}{b['p50_us']:>13.2f}{b['p95_us']:>13.2f}{ratio:>10.0f}x"
            )
        rss_ratio = db["peak_rss_mb"] / dct["peak_rss_mb"]
        print(
            f"peak RSS: db {db['peak_rss_mb']:.0f} MB, dict {dct['peak_rss_mb']:.0f} MB, "
            f"ratio {rss_ratio:.3f} (interpreter+imports: db {db['import_rss_mb']:.0f} MB, "
            f"dict {dct['import_rss_mb']:.0f} MB)"
        )
        worst = max(r["db"]["p50_us"] for r in rows.values())
        print(f"target p50 < 1000 µs: {'PASS' if worst < 1000 else 'FAIL'} (worst {worst:.0f} µs)")
        if "edges" in SIZES[size]:
            print(f"target RSS ratio <= 0.2: {'PASS' if rss_ratio <= 0.2 else 'FAIL'}")
        results[size] = {
            "graph": info,
            "ops": rows,
            "rss_mb": {"db": db["peak_rss_mb"], "dict": dct["peak_rss_mb"]},
            "rss_ratio": rss_ratio,
        }
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
