"""The semantic judge, measured before it is trusted: per fault type, how often a model rejects a
semantic fault that passes every program check, and how often it accepts a correct item — for
re-derivation alone, the two-stage review alone and both (the judge as certification runs it).

The labelled set (:mod:`components.certify.judge_set`) is built from certified template candidates
of the generated academic graph: correct items and copies with one fault each (question swapped,
modifier turned around, relation changed, answer scope changed, answer hard-coded). It is split by
source item into a development part (``--split dev``: for prompt work) and a test part (the
default: what is reported). The two-stage judge (:class:`~components.certify.judge.SemanticJudge`,
batched, the input restricted as in certification) and re-derivation
(:class:`~components.certify.rederive.Rederiver`: the model writes its own query ``--k`` times,
worked examples from a seed of their own) run once per model over the chosen items, each stage on
every item; "both" is combined from those cached verdicts (:func:`final_verdict`), as is any other
``--min-votes`` (``--from`` re-reads a ``--verdicts`` dump without a model).

Per fault type and model it prints the reject / accept / uncertain rates with 95 % Wilson
intervals — overall and by answer type — and the targets for a default judge: accept ≥ 80 % of
correct items, reject ≥ 70 % of every fault kind *whose question has another answer*: a question
swap whose source item's answer differs, and the modifier / relation / scope changes of
non-boolean items (a yes/no question keeps its answer half the time by chance); swaps with the
same answer, boolean changes and ``hard_coded_computed`` (the answer is unchanged: re-derivation
cannot see it by design) are reported apart. Then one JSON line.

    python benchmarks/judge.py --model qwen2.5-coder-0.5b [--per-fault 20] [--split test] [--stages rederive review]
    python benchmarks/judge.py --model qwen2.5-coder-1.5b --per-fault 15     # after `make models`
    python benchmarks/judge.py --from verdicts.qwen2.5-coder-0.5b.json --min-votes 1
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


def certified_items(scale: int, n: int, seed: int) -> tuple[list, object, object]:
    """Strict template candidates of the generated academic graph, its schema and its read-only
    query path (the database stays open for re-derivation)."""
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
    return strict, schema, qp


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


def kind_of(item, answers: dict) -> str:
    """The item's reporting kind: ``correct``, a fault whose question has another answer
    (``fault``), or one reported apart (``fault (same answer)``, ``fault (yes/no)``)."""
    if item.fault == "correct":
        return "correct"
    if item.fault == "hard_coded_computed":
        return "hard_coded_computed (answer unchanged)"
    if item.fault == "question_swap":
        other = answers.get(item.detail.removeprefix("question of "))
        if other is not None and other == item.answer:
            return "question_swap (same answer)"
        return "question_swap"
    return f"{item.fault} (yes/no)" if item.answer_type == "boolean" else item.fault


def rates(rows: list[dict], key: str) -> dict[str, dict]:
    """Per reporting kind: n and the reject / accept / uncertain counts, rates and Wilson CIs of
    the verdicts under ``key``."""
    out: dict[str, dict] = {}
    for kind in sorted({r["kind"] for r in rows}, key=lambda f: (f != "correct", "(" in f, f)):
        got = Counter(r[key] for r in rows if r["kind"] == kind)
        n = sum(got.values())
        out[kind] = {"n": n}
        for verdict in ("reject", "accept", "uncertain"):
            out[kind][verdict] = {"rate": got[verdict] / n if n else 0.0, "ci": wilson(got[verdict], n)}
    return out


def met(table: dict) -> bool:
    faults = {k: r for k, r in table.items() if k != "correct" and "(" not in k}
    return (
        all(r["reject"]["rate"] >= TARGET_REJECT for r in faults.values())
        and table.get("correct", {}).get("accept", {}).get("rate", 0.0) >= TARGET_ACCEPT
    )


def print_table(title: str, table: dict) -> None:
    print(f"\n#### {title}\n")
    print("| item kind | n | reject [95 % CI] | accept [95 % CI] | uncertain |")
    print("|---|---|---|---|---|")
    for kind, r in table.items():
        cell = lambda v: f"{r[v]['rate']:.2f} [{r[v]['ci'][0]:.2f}, {r[v]['ci'][1]:.2f}]"  # noqa: E731
        print(f"| {kind} | {r['n']} | {cell('reject')} | {cell('accept')} | {r['uncertain']['rate']:.2f} |")
    print(
        f"\ntargets (accept ≥ {TARGET_ACCEPT:.0%} of correct items, reject ≥ {TARGET_REJECT:.0%} of every fault "
        f"kind whose question has another answer): {'met' if met(table) else 'NOT met'}"
    )


def combine(rows: list[dict], min_votes: int) -> None:
    """Each row's re-derivation verdict at ``min_votes`` (from its cached derivation answers) and
    the judge's verdict of both stages."""
    from components.certify.judge import final_verdict
    from components.certify.rederive import decide

    for r in rows:
        if r.get("derived_answers") is not None:
            r["rederive"] = decide(r["derived_answers"], r["answer"], r["answer_type"], min_votes=min_votes)[0]
        r["both"] = final_verdict(r.get("rederive", "off"), r.get("review", "off"))


def report(model: str, rows: list[dict], min_votes: int, split: str) -> dict:
    combine(rows, min_votes)
    out = {}
    ran = {k for k in ("rederive", "review") if any(r.get(k, "off") != "off" for r in rows)}
    for key, title in (("rederive", "re-derivation alone"), ("review", "two-stage review alone"), ("both", "both")):
        if key not in ran and not (key == "both" and len(ran) == 2):
            continue
        table = rates(rows, key)
        print_table(f"{model} — {title} ({split} split, min votes {min_votes})", table)
        by_type = {}
        for t in sorted({r["answer_type"] for r in rows}):
            by_type[t] = rates([r for r in rows if r["answer_type"] == t], key)
        print(f"\n{title}, by answer type (faults whose question has another answer; correct items):")
        for t, tab in by_type.items():
            faults = [k for k in tab if k != "correct" and "(" not in k]
            rej = sum(tab[k]["reject"]["rate"] * tab[k]["n"] for k in faults)
            nf = sum(tab[k]["n"] for k in faults)
            corr = tab.get("correct", {"n": 0, "accept": {"rate": 0.0}})
            ok = corr["accept"]["rate"] * corr["n"]
            print(f"  {t}: rejects {rej:.0f}/{nf} faults, accepts {ok:.0f}/{corr['n']} correct")
        out[key] = {"rates": {k: {v: r[v] if v == "n" else r[v]["rate"] for v in r} for k, r in table.items()}}
        out[key]["targets_met"] = met(table)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", action="append", default=[], help="a model name or folder (repeatable)")
    p.add_argument("--from", dest="dumps", action="append", type=Path, default=[], help="a --verdicts dump to re-read")
    p.add_argument("--stages", nargs="+", choices=["rederive", "review"], default=["rederive", "review"])
    p.add_argument("--per-fault", type=int, default=20, help="items per fault type (and correct items)")
    p.add_argument("--split", choices=["test", "dev"], default="test")
    p.add_argument("--candidates", type=int, default=400, help="template candidates to certify first")
    p.add_argument("--scale", type=int, default=2000)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--k", type=int, default=3, help="derivations per question")
    p.add_argument("--min-votes", type=int, default=1, help="derivations a rejecting answer needs")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-ask-verdict", action="store_true", help="leave a reply cut before its verdict uncertain")
    p.add_argument("--verdicts", type=Path, default=None, help="write every item's verdicts and texts here (JSON)")
    args = p.parse_args()
    if not args.model and not args.dumps:
        p.error("give --model or --from")

    results = {}
    for dump in args.dumps:
        data = json.loads(dump.read_text())
        results[str(dump)] = report(data["model"], data["rows"], args.min_votes, data["split"])
    if not args.model:
        print(json.dumps({"min_votes": args.min_votes, "models": results}))
        return

    import torch

    from components.certify.judge import SemanticJudge
    from components.certify.rederive import Rederiver, judge_examples
    from components.llm.transformers_backend import TransformersBackend

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    strict, schema, qp = certified_items(args.scale, args.candidates, args.seed)
    items, per = judge_items(strict, schema, args.split, args.per_fault)
    answers = {c.id: c.answer for c in strict}
    examples = judge_examples(qp, schema, seed=args.seed)
    print(f"{len(strict)} certified items → {len(items)} judge items ({args.split} split): {dict(per)}", flush=True)
    print(f"set-up {time.perf_counter() - t0:.0f} s; {len(examples)} worked examples", flush=True)
    for model in args.model:
        llm = TransformersBackend(model, threads=args.threads)
        rows = [
            {
                "id": i.id,
                "fault": i.fault,
                "kind": kind_of(i, answers),
                "answer": i.answer,
                "answer_type": i.answer_type,
                "question": i.question,
            }
            for i in items
        ]
        seconds = {}
        if "rederive" in args.stages:
            t1 = time.perf_counter()
            rd = Rederiver(llm, qp, schema, examples, k=args.k, min_votes=args.min_votes, seed=args.seed)
            for r, v in zip(rows, rd.rederive(items), strict=True):
                r["derived_answers"] = v.answers
                r["rederivation"] = v.to_json()
            seconds["rederive"] = round(time.perf_counter() - t1, 1)
            print(f"re-derivation: {seconds['rederive']:.0f} s", flush=True)
        if "review" in args.stages:
            t1 = time.perf_counter()
            judge = SemanticJudge(llm, max_new_tokens=args.max_new_tokens, ask_verdict=not args.no_ask_verdict)
            for r, v in zip(rows, judge.judge(items), strict=True):
                r["review"], r["review_json"] = v.verdict, v.to_json()
            seconds["review"] = round(time.perf_counter() - t1, 1)
            print(f"review: {seconds['review']:.0f} s", flush=True)
        llm.close()
        if args.verdicts is not None:
            dump = {"model": model, "split": args.split, "k": args.k, "rows": rows}
            args.verdicts.with_suffix(f".{Path(model).name}.json").write_text(json.dumps(dump, indent=1, default=str))
        results[model] = {"seconds": seconds, "per_item": {k: round(v / len(items), 2) for k, v in seconds.items()}}
        results[model].update(report(model, rows, args.min_votes, args.split))
    print(
        json.dumps(
            {
                "split": args.split,
                "items": len(items),
                "per_fault": dict(per),
                "min_votes": args.min_votes,
                "models": results,
            }
        )
    )


if __name__ == "__main__":
    main()
