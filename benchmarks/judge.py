"""The semantic judge, measured before it is trusted: per fault type, how often a model rejects a
semantic fault that passes every program check, and how often it accepts a correct item.

The labelled set (:mod:`components.certify.judge_set`) is built from certified template candidates
of the generated academic graph: correct items and copies with one fault each (question swapped,
modifier turned around, relation changed, answer scope changed, answer hard-coded). It is split by
source item into a development part (``--split dev``: for prompt work) and a test part (the
default: what is reported). The two-stage judge (:class:`~components.certify.judge.SemanticJudge`,
batched, the input restricted as in certification) runs once per model over the chosen items.

Per fault type and model it prints the reject / accept / uncertain rates with 95 % Wilson
intervals, and the targets for a default judge (rejects ≥ 70 % of every semantic fault type,
accepts ≥ 80 % of correct items), then one JSON line.

    python benchmarks/judge.py --model qwen2.5-coder-0.5b [--per-fault 20] [--split test]
    python benchmarks/judge.py --model qwen2.5-coder-1.5b --per-fault 15     # after `make models`
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_REJECT, TARGET_ACCEPT = 0.70, 0.80


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval of ``k`` successes in ``n``."""
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def certified_items(scale: int, n: int, seed: int) -> tuple[list, object]:
    """Strict template candidates of the generated academic graph and its schema."""
    from components.certify.certifier import certify_many
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.graph.sources import demo
    from components.quizzer.template import TemplateQuizzer

    db = Path(tempfile.mkdtemp(prefix="judge-bench-")) / "db"
    load_graph(demo.generate("academic", seed=0, scale=scale), db)
    backend = LadybugBackend(db)
    schema = backend.schema()
    qp = ReadOnlyQueryPath(backend, schema=schema)
    cands = [c for c in TemplateQuizzer(qp, schema, seed=seed).generate(n) if c.ok]
    fp = backend.fingerprint()
    certs = certify_many(cands, schema=schema, query_path=qp, current_fingerprint=fp, snapshot_fingerprint=fp)
    strict = [c for c, cert in zip(cands, certs, strict=True) if cert.status == "strict"]
    backend.close()
    return strict, schema


def judge_items(strict: list, schema: object, split: str, per_fault: int) -> tuple[list, Counter]:
    """The labelled judge items of ``split`` made from ``strict``: the first ``per_fault`` of each
    kind (correct and every fault type), and how many of each."""
    from components.certify.judge_set import build_judge_set

    items, per = [], Counter()
    for item in build_judge_set(strict, schema):
        if item.split == split and per[item.fault] < per_fault:
            per[item.fault] += 1
            items.append(item)
    return items, per


def rates(items: list, verdicts: list) -> dict[str, dict]:
    """Per fault type: n and the reject / accept / uncertain counts, rates and Wilson CIs."""
    out: dict[str, dict] = {}
    for fault in sorted({i.fault for i in items}, key=lambda f: (f != "correct", f)):
        got = Counter(v.verdict for i, v in zip(items, verdicts, strict=True) if i.fault == fault)
        n = sum(got.values())
        out[fault] = {"n": n}
        for verdict in ("reject", "accept", "uncertain"):
            out[fault][verdict] = {"rate": got[verdict] / n if n else 0.0, "ci": wilson(got[verdict], n)}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", action="append", required=True, help="a model name or folder (repeatable)")
    p.add_argument("--per-fault", type=int, default=20, help="items per fault type (and correct items)")
    p.add_argument("--split", choices=["test", "dev"], default="test")
    p.add_argument("--candidates", type=int, default=400, help="template candidates to certify first")
    p.add_argument("--scale", type=int, default=2000)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-ask-verdict", action="store_true", help="leave a reply cut before its verdict uncertain")
    p.add_argument("--verdicts", type=Path, default=None, help="write every item's verdict and texts here (JSON)")
    args = p.parse_args()

    import torch

    from components.certify.judge import SemanticJudge
    from components.llm.transformers_backend import TransformersBackend

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    strict, schema = certified_items(args.scale, args.candidates, args.seed)
    items, per = judge_items(strict, schema, args.split, args.per_fault)
    print(f"{len(strict)} certified items → {len(items)} judge items ({args.split} split): {dict(per)}", flush=True)
    print(f"set-up {time.perf_counter() - t0:.0f} s", flush=True)
    results = {}
    for model in args.model:
        t1 = time.perf_counter()
        llm = TransformersBackend(model, threads=args.threads)
        judge = SemanticJudge(llm, max_new_tokens=args.max_new_tokens, ask_verdict=not args.no_ask_verdict)
        verdicts = judge.judge(items)
        llm.close()
        secs = time.perf_counter() - t1
        table = rates(items, verdicts)
        asked = sum(bool(v.asked) for v in verdicts)
        results[model] = {
            "seconds": round(secs, 1),
            "per_item_s": round(secs / len(items), 2),
            "verdict_asked": asked,
            "rates": table,
        }
        if args.verdicts is not None:
            dump = [{"fault": i.fault, **v.to_json()} for i, v in zip(items, verdicts, strict=True)]
            args.verdicts.with_suffix(f".{Path(model).name}.json").write_text(json.dumps(dump, indent=1))
        head = (
            f"judge {model} ({args.split} split, {len(items)} items, {secs:.0f} s, {secs / len(items):.1f} s/item; "
            f"verdict asked for after a cut reply: {asked})"
        )
        print(f"\n### {head}\n")
        print("| item kind | n | reject [95 % CI] | accept [95 % CI] | uncertain |")
        print("|---|---|---|---|---|")
        for fault, r in table.items():
            cell = lambda v: f"{r[v]['rate']:.2f} [{r[v]['ci'][0]:.2f}, {r[v]['ci'][1]:.2f}]"  # noqa: E731
            print(f"| {fault} | {r['n']} | {cell('reject')} | {cell('accept')} | {r['uncertain']['rate']:.2f} |")
        faults = {f: r for f, r in table.items() if f != "correct"}
        met = (
            all(r["reject"]["rate"] >= TARGET_REJECT for r in faults.values())
            and table.get("correct", {}).get("accept", {}).get("rate", 0.0) >= TARGET_ACCEPT
        )
        print(
            f"\ntargets (reject ≥ {TARGET_REJECT:.0%} of every fault type, accept ≥ {TARGET_ACCEPT:.0%} of correct "
            f"items): {'met' if met else 'NOT met'}"
        )
        results[model]["targets_met"] = met
    print(json.dumps({"split": args.split, "items": len(items), "per_fault": dict(per), "models": results}))


if __name__ == "__main__":
    main()
