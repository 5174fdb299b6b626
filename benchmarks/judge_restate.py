"""A judge probe on the labelled judge set's development part: can a small model tell a faulty
question from a correct one if it is asked two easy things instead of one hard one?

1. *Restate*: the model writes the one English question the evidence query answers (from the
   query, its parameters and first rows only — it never sees the item's question);
2. *Compare*: the model is asked whether the item's question and its restatement ask for exactly
   the same thing (names and ids ignored), answering yes or no after an ``Answer:`` prefix.

Per item kind it prints the greedy yes / no rates with 95 % Wilson intervals, and how well
p(yes) / (p(yes) + p(no)) of the compare step separates correct items from each fault type (the
AUC: 0.5 is chance, 1.0 perfect) — a threshold could only be tuned if that separation exists.
It is a probe for prompt work, not the reported judge: use ``benchmarks/judge.py`` for that.

    python benchmarks/judge_restate.py --model qwen2.5-coder-1.5b [--per-fault 8] [--split dev]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from judge import certified_items, judge_items, wilson  # noqa: E402

RESTATE = """Here is a Cypher query over a graph of {labels}, with its parameters and result.

{evidence}

Write the one English question that this query answers: say which relationships it follows and \
in which direction, every filter, whether it asks for the highest or lowest value, a count, a \
yes/no, one item or all items. Call the start node "the start {start}". Write only the question."""

COMPARE = """Do these two questions ask for exactly the same thing? Ignore names and ids: "the start \
node" may stand for any named node. They differ if they use different relationships (for example \
"wrote" vs "cites"), a different direction, opposite words (highest vs lowest, most vs fewest, \
before vs after, at least vs at most), different numbers, or a different amount (all items vs one \
item, a count vs a list).

{shots}Question 1: {question}
Question 2: {restated}

Answer yes or no."""

#: worked comparisons on another domain (films), shown with ``--shots``: one of each kind of
#: difference, and two pairs that differ only in names or wording
SHOTS = """Examples:
Question 1: Which films did the actor "Ann Lee" direct?
Question 2: What are the films that the start person acted in?
Answer: no (directed vs acted in)

Question 1: Among the films of the director "Bo Kim", what is the lowest rating?
Question 2: What is the highest rating of the films directed by the start person?
Answer: no (lowest vs highest)

Question 1: How many actors played in the film "Dune"?
Question 2: What is the number of people who acted in the start film?
Answer: yes

Question 1: Which is one of the films released after 2001 that "Cy Ray" acted in?
Question 2: What are all the films after 2001 with the start person as an actor?
Answer: no (one film vs all films)

Question 1: Which studios made the films that "Di Fox" acted in?
Question 2: What are the studios that produced movies the start person acted in?
Answer: yes

"""


def evidence_text(item) -> str:
    """Each evidence query, its parameters, row count and first three rows — the judge's own
    bounded preview (:meth:`JudgeInput.from_candidate`), without the question or the program."""
    from components.certify.judge import JudgeInput

    return "\n".join(
        f"query: {ev['query']}\nparams: {json.dumps(ev['params'], default=str)}\n"
        f"rows: {ev['row_count']}, first rows: {json.dumps(ev['rows'], default=str)}"
        for ev in JudgeInput.from_candidate(item, preview_rows=3).evidence
    )


def auc(pos: list[float], neg: list[float]) -> float:
    """P(a correct item scores above a faulty one), ties counted half."""
    if not pos or not neg:
        return float("nan")
    return sum((a > b) + 0.5 * (a == b) for a in pos for b in neg) / (len(pos) * len(neg))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="a model name or folder")
    p.add_argument("--per-fault", type=int, default=8)
    p.add_argument("--split", choices=["dev", "test"], default="dev")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--shots", action="store_true", help="show five worked comparisons (another domain) first")
    p.add_argument("--dump", type=Path, default=None, help="write every item's restatement and score here")
    args = p.parse_args()

    import torch

    from components.llm.base import SamplingParams
    from components.llm.transformers_backend import TransformersBackend

    torch.set_num_threads(args.threads)
    strict, schema = certified_items(2000, 400, 0)
    items, _ = judge_items(strict, schema, args.split, args.per_fault)
    labels = ", ".join(n.label.lower() + "s" for n in schema.node_labels)
    llm = TransformersBackend(args.model, threads=args.threads)
    t0 = time.perf_counter()
    asks = []
    for item in items:
        start = re.search(r"\(s:`(\w+)`", item.evidence[0]["query"]) if item.evidence else None
        prompt = RESTATE.format(
            labels=labels, evidence=evidence_text(item), start=start.group(1).lower() if start else "node"
        )
        asks.append([{"role": "user", "content": prompt}])
    greedy = SamplingParams(max_new_tokens=80, temperature=0.0, seed=0, n=1)
    restated = [(out[0].text.strip().splitlines() or [""])[0] for out in llm.generate(asks, greedy)]
    tok, model = llm.tokenizer, llm.model
    yes = sorted({tok.encode(w, add_special_tokens=False)[0] for w in (" yes", " Yes", "yes", "Yes")})
    no = sorted({tok.encode(w, add_special_tokens=False)[0] for w in (" no", " No", "no", "No")})
    scores, answers = [], []
    for item, r in zip(items, restated, strict=True):
        conv = [
            {
                "role": "user",
                "content": COMPARE.format(shots=SHOTS if args.shots else "", question=item.question, restated=r),
            },
            {"role": "assistant", "content": "Answer:"},
        ]
        ids = tok.apply_chat_template(conv, continue_final_message=True, return_tensors="pt", return_dict=True)
        with torch.no_grad():
            logp = torch.log_softmax(model(ids["input_ids"]).logits[0, -1].float(), -1)
        margin = float(torch.logsumexp(logp[yes], 0) - torch.logsumexp(logp[no], 0))
        scores.append(1.0 / (1.0 + math.exp(-margin)))
        answers.append("yes" if margin > 0 else "no")
    secs = time.perf_counter() - t0
    llm.close()

    by_kind: dict[str, list[int]] = defaultdict(list)
    for k, item in enumerate(items):
        by_kind[item.fault].append(k)
    shots = ", five worked comparisons" if args.shots else ""
    print(f"\n### restate + compare{shots}, {args.model} ({args.split} split, {len(items)} items, {secs:.0f} s)\n")
    print("| item kind | n | says no (reject) [95 % CI] | says yes (accept) [95 % CI] | AUC vs correct |")
    print("|---|---|---|---|---|")
    pos = [scores[k] for k in by_kind.get("correct", [])]
    summary = {}
    for kind in sorted(by_kind, key=lambda f: (f != "correct", f)):
        ks = by_kind[kind]
        n_no = sum(answers[k] == "no" for k in ks)
        lo, hi = wilson(n_no, len(ks))
        alo, ahi = wilson(len(ks) - n_no, len(ks))
        a = auc(pos, [scores[k] for k in ks]) if kind != "correct" else float("nan")
        summary[kind] = {"n": len(ks), "reject": n_no / len(ks), "auc": None if math.isnan(a) else round(a, 2)}
        print(
            f"| {kind} | {len(ks)} | {n_no / len(ks):.2f} [{lo:.2f}, {hi:.2f}] | "
            f"{1 - n_no / len(ks):.2f} [{alo:.2f}, {ahi:.2f}] | {'—' if math.isnan(a) else f'{a:.2f}'} |"
        )
    if args.dump is not None:
        rows = [
            {"fault": i.fault, "question": i.question, "restated": r, "p_yes": s}
            for i, r, s in zip(items, restated, scores, strict=True)
        ]
        args.dump.write_text(json.dumps(rows, indent=1))
    print(
        json.dumps(
            {"model": args.model, "shots": args.shots, "split": args.split, "seconds": round(secs, 1), "kinds": summary}
        )
    )


if __name__ == "__main__":
    main()
