"""Graph-CoT teacher trajectories: coverage per family and measured vs estimated levels.

Certifies template candidates of a generated demo graph (strict items only), translates each into
an executed Graph-CoT trajectory (:mod:`components.curriculum.trajectories`) and prints

* coverage per template family (items, trajectories, exclusions by reason) and overall;
* the confusion matrix of the evidence-structure level estimate against the level the
  trajectory's rounds measure (S-/E-rounds from the node ids each call returned);
* rounds per trajectory and the wall time (index build, translation);

then one JSON line. Runs on CPU in about a minute (the node index embeds every node once).

    python benchmarks/trajectories.py [--domain academic] [--scale 2000] [--candidates 400]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--domain", default="academic")
    p.add_argument("--scale", type=int, default=2000)
    p.add_argument("--candidates", type=int, default=400)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()

    from components.certify.certifier import certify_many
    from components.certify.dataset import features_json
    from components.curriculum.levels import estimate_level
    from components.curriculum.sampler import LEVELS
    from components.curriculum.trajectories import coverage, level_confusion, teacher_trajectories
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.graph.sources import demo
    from components.quizzer.template import TemplateQuizzer
    from components.tools.graph_cot import GraphCoT
    from components.tools.retriever import NodeIndex, shared_embedder

    t0 = time.perf_counter()
    db = Path(tempfile.mkdtemp(prefix="traj-bench-")) / "db"
    load_graph(demo.generate(args.domain, seed=0, scale=args.scale), db)
    backend = LadybugBackend(db)
    schema = backend.schema()
    qp = ReadOnlyQueryPath(backend, schema=schema)
    cands = [c for c in TemplateQuizzer(qp, schema, seed=args.seed).generate(args.candidates) if c.ok]
    fp = backend.fingerprint()
    certs = certify_many(cands, schema=schema, query_path=qp, current_fingerprint=fp, snapshot_fingerprint=fp)
    items = [c.to_record() for c, cert in zip(cands, certs, strict=True) if cert.status == "strict"]
    setup = time.perf_counter() - t0

    t0 = time.perf_counter()
    index = NodeIndex.open(backend, shared_embedder(threads=args.threads), progress=False)
    index_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    trajectories, excluded = teacher_trajectories(items, GraphCoT(backend, index=index))
    translate_s = time.perf_counter() - t0
    estimated = {}
    for item in items:
        start = json.loads(item.get("start_node_json") or "{}")
        feats = [features_json(e["query"], schema) for e in json.loads(item["evidence_json"])]
        estimated[item["id"]] = estimate_level(feats, schema, start.get("label"))
    backend.close()

    table = coverage(trajectories, excluded)
    n = len(items)
    print(f"## Graph-CoT teacher trajectories — {args.domain} ({args.scale} nodes), {n} strict certified items\n")
    print("| family | items | trajectories | coverage | excluded (reason: count) |")
    print("|---|---|---|---|---|")
    for fam, row in table.items():
        why = ", ".join(f"{k}: {v}" for k, v in row["excluded"].items()) or "—"
        print(f"| {fam} | {row['items']} | {row['trajectories']} | {row['coverage']:.0%} | {why} |")
    print(
        f"| **all** | {n} | {len(trajectories)} | {len(trajectories) / max(n, 1):.0%} | "
        f"{', '.join(f'{k}: {v}' for k, v in sorted(Counter(e.reason for e in excluded).items()))} |"
    )
    confusion = level_confusion(estimated, trajectories)
    print("\nestimated (rows) × measured (columns) level, items with a trajectory:\n")
    print("| estimated \\ measured | " + " | ".join(LEVELS) + " |")
    print("|---|" + "---|" * len(LEVELS))
    for est in LEVELS:
        print(f"| {est} | " + " | ".join(str(confusion[est][m]) for m in LEVELS) + " |")
    agree = sum(confusion[lv][lv] for lv in LEVELS)
    rounds = Counter(len(t.rounds) for t in trajectories)
    print(f"\nagreement: {agree}/{len(trajectories)}; rounds per trajectory: {dict(sorted(rounds.items()))}")
    print(
        f"wall: set-up {setup:.0f} s, node index {index_s:.0f} s, translation {translate_s:.1f} s "
        f"({translate_s / max(n, 1) * 1e3:.0f} ms/item)"
    )
    print(
        json.dumps(
            {
                "domain": args.domain,
                "scale": args.scale,
                "items": n,
                "trajectories": len(trajectories),
                "excluded": dict(Counter(e.reason for e in excluded)),
                "coverage": table,
                "confusion": confusion,
                "wall_s": {"setup": round(setup, 1), "index": round(index_s, 1), "translate": round(translate_s, 2)},
            }
        )
    )


if __name__ == "__main__":
    main()
