"""The GraphCert funnel with a real small model, on 2 cores: LLM-Quizzer episodes and template
candidates on the generated academic graph, certified, the two-stage judge on every candidate that
passes the program checks.

The template questions are rewritten into fluent English by the same model first (checked; the
accepted / rejected counts and a few examples are printed; ``--no-paraphrase`` skips it). Per
quizzer (LLM, template) it prints: episodes, valid final programs, strict / partial / hard
failure (by reason) / judge accept, reject, uncertain / admitted — each rate with a 95 % Wilson
interval — the judge's agreement with the certifier (accept rate on strict vs partial items), the
LLM's tokens per second and the wall time of each stage; then the paper's funnel for comparison
(strict ≈ 29–35 %, partial ≈ 29–35 %, excluded ≈ 36 %, hard failures 14–21 %) and one JSON line.

    python benchmarks/funnel.py [--model qwen2.5-coder-0.5b] [--judge-model M] [--llm 40] [--template 40]
                                [--closing force|hint] [--traces FILE]
    python benchmarks/funnel.py --noise hard=0.18 partial=0.3 semantic=0.15 paraphrase=0.15 --template 200

With ``--noise`` the template candidates become a noisy pool (components/quizzer/noisy.py: shares
replaced by the injector's hard and partial faults, changed questions and paraphrases the meaning
check rejects; ``--no-paraphrase`` is implied) and the funnel is printed per source and kind too —
what certification and the judge removed of each kind of noise, and what they let through.

Budget: ≤ 90 minutes on 2 cores with nothing else running.
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

from benchmarks.judge import wilson  # noqa: E402

PAPER = "strict ≈ 29–35 %, partial ≈ 29–35 %, excluded ≈ 36 %, hard failures 14–21 %"


def _rate(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k}/{n} = {k / n:.0%} [{lo:.0%}, {hi:.0%}]" if n else "0/0"


def table(rows: list[dict], label: str) -> list[str]:
    """The funnel of one quizzer's rows as Markdown lines."""
    n = len(rows)
    status = Counter(r["status"] for r in rows)
    hard = Counter(r["reasons"][0] if r["reasons"] else "?" for r in rows if r["status"] == "hard_failure")
    quizzer = Counter(r["failure_reason"] for r in rows if r.get("failure_reason"))
    certified = [r for r in rows if r["status"] != "hard_failure"]
    verdict = Counter(r["verdict"] for r in certified)
    lines = [f"**{label}** ({n} candidates)", "", "| stage | count and rate [95 % CI] |", "|---|---|"]
    lines.append(f"| valid final program (quizzer's own checks) | {_rate(n - sum(quizzer.values()), n)} |")
    lines.append(f"| strict | {_rate(status['strict'], n)} |")
    lines.append(f"| partial | {_rate(status['partial'], n)} |")
    lines.append(f"| hard failure | {_rate(status['hard_failure'], n)} |")
    for reason, k in hard.most_common():
        detail = ""
        if reason == "quizzer_failure":
            detail = " (" + ", ".join(f"{q} {c}" for q, c in quizzer.most_common()) + ")"
        lines.append(f"| — {reason}{detail} | {_rate(k, n)} |")
    for v in ("accept", "reject", "uncertain"):
        lines.append(f"| judge {v} (of {len(certified)} certified) | {_rate(verdict[v], len(certified))} |")
    lines.append(f"| admitted | {_rate(sum(bool(r['admitted']) for r in rows), n)} |")
    for s in ("strict", "partial"):
        group = [r for r in certified if r["status"] == s]
        if group:
            acc = sum(r["verdict"] == "accept" for r in group)
            lines.append(f"| judge accepts {s} items | {_rate(acc, len(group))} |")
    return lines


SOURCE_COLUMNS = ("candidates", "hard_failure", "strict", "partial", "judge_accept", "judge_reject",
                  "judge_uncertain", "leaked", "admitted")  # fmt: skip


def source_table(rows: list[dict]) -> list[str]:
    """The funnel by source and kind as Markdown lines, with the admitted share's Wilson CI."""
    head = "| source | kind | " + " | ".join(SOURCE_COLUMNS) + " | admitted share [95 % CI] |"
    lines = [head, "|" + "---|" * (len(SOURCE_COLUMNS) + 3)]
    for r in rows:
        cells = " | ".join(str(r[c]) for c in SOURCE_COLUMNS)
        lines.append(f"| {r['source']} | {r['kind']} | {cells} | {_rate(r['admitted'], r['candidates'])} |")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="qwen2.5-coder-0.5b", help="the Quizzer's model (a name or folder)")
    p.add_argument("--judge-model", default=None, help="the judge's model (default: the Quizzer's)")
    p.add_argument("--llm", type=int, default=40, help="LLM-Quizzer episodes")
    p.add_argument("--template", type=int, default=40, help="template candidates")
    p.add_argument("--scale", type=int, default=2000)
    p.add_argument("--max-turns", type=int, default=3)
    p.add_argument("--max-new-tokens", type=int, default=320)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--no-paraphrase", action="store_true", help="keep the template questions as generated")
    p.add_argument("--closing", choices=["force", "hint"], default="force", help="the LLM Quizzer's closing turn")
    p.add_argument("--traces", type=Path, default=None, help="write the LLM episodes' traces here (JSON)")
    p.add_argument("--noise", nargs="*", default=[], metavar="SOURCE=SHARE", help="a noisy pool: hard=0.18 …")
    p.add_argument("--judge", choices=["on", "off"], default="on")
    args = p.parse_args()
    noise = {k: float(v) for k, v in (item.split("=", 1) for item in args.noise)}

    import torch

    from components.certify.dataset import CertifyConfig, funnel_by_source, run_certification, source_chart
    from components.graph.load import load_graph
    from components.graph.sources import demo
    from components.quizzer.run import QuizConfig, run_quiz, summarize

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    db = Path(tempfile.mkdtemp(prefix="funnel-")) / "db"
    load_graph(demo.generate("academic", seed=0, scale=args.scale), db)
    quiz = QuizConfig(
        template_n=args.template,
        llm_n=args.llm,
        seed=args.seed,
        model=args.model,
        backend_options={"threads": args.threads},
        llm={"max_turns": args.max_turns, "max_new_tokens": args.max_new_tokens, "closing": args.closing},
        paraphrase=not (args.no_paraphrase or noise),
        noise=noise,
    )
    run = run_quiz(str(db), quiz)
    if args.traces is not None:
        llm_cands = [c.to_record() for c in run.candidates if c.quizzer == "llm"]
        args.traces.write_text(json.dumps(llm_cands, indent=1, default=str))
    quiz_summary = summarize(run.candidates, run.wall_s)
    judge_model = args.judge_model or args.model
    certify = CertifyConfig(
        judge=args.judge, judge_model=judge_model, judge_options={"threads": args.threads}, fault_sample=0
    )
    certified = run_certification(run.candidates, str(db), certify)
    rows = certified.rows
    total = time.perf_counter() - t0
    print(f"## GraphCert funnel — academic ({args.scale} nodes), Quizzer {args.model}, judge {judge_model}\n")
    for label, kind in (("LLM Quizzer", "llm"), ("Template Quizzer", "template")):
        print("\n".join(table([r for r in rows if r["quizzer"] == kind], label)), "\n")
    if run.paraphrase:
        para = run.paraphrase
        print(f"natural questions: {para['accepted']} of {para['asked']} rewritten; rejected {para['rejected']}")
        for c in [c for c in run.candidates if (c.meta.get("paraphrase") or {}).get("status") == "accepted"][:3]:
            print(f"  {c.meta['template_question']}\n    → {c.question}")
    llm = [c for c in run.candidates if c.quizzer == "llm"]
    first = Counter(c.meta.get("first_failure") or c.failure_reason or "ok" for c in llm)
    closings = sum(any(t.get("kind") == "closing" for t in c.trace) for c in llm)
    print(f"LLM episodes: first failure before the repair {dict(first)}; repaired {sum(c.repaired for c in llm)}; "
          f"with a closing turn {closings}")  # fmt: skip
    tps = quiz_summary.get("llm_tokens_per_s")
    print(f"LLM Quizzer: {quiz_summary['llm_completion_tokens']} tokens, {tps} tokens/s (tool time included)")
    walls = {
        **{f"quiz:{k}": v for k, v in run.wall_s.items()},
        **{f"certify:{k}": v for k, v in certified.wall_s.items()},
    }
    print("wall time per stage: " + ", ".join(f"{k} {v:.0f} s" for k, v in walls.items()) + f"; total {total:.0f} s")
    print(f"the paper's funnel (its models, ~3,100 candidates per domain): {PAPER}")
    if noise:
        print(f"\nnoisy pool: {json.dumps(run.noise['by_source'])} (requested {noise})\n")
        print("\n".join(source_table(funnel_by_source(rows))), "\n")
        print(source_chart(funnel_by_source(rows)), "\n")
    by_kind = {}
    for kind in ("llm", "template"):
        part = [r for r in rows if r["quizzer"] == kind]
        by_kind[kind] = {
            "n": len(part),
            "status": dict(Counter(r["status"] for r in part)),
            "verdict": dict(Counter(r["verdict"] for r in part)),
            "admitted": sum(bool(r["admitted"]) for r in part),
            "quizzer_failures": dict(Counter(r["failure_reason"] for r in part if r.get("failure_reason"))),
        }
    print(json.dumps({"model": args.model, "judge_model": judge_model, "wall_s": walls, "total_s": round(total, 1),
                      "llm_tokens_per_s": tps, "paraphrase": run.paraphrase, "by_quizzer": by_kind,
                      "llm_first_failures": dict(first), "llm_closings": closings, "noise": run.noise,
                      "by_source": funnel_by_source(rows) if noise else None}))  # fmt: skip


if __name__ == "__main__":
    main()
