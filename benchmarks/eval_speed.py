"""Evaluation speed: one system on ``--questions`` held-out questions × ``--samples`` samples in the
Python + Cypher sandbox, judged, as the ``eval_reports`` asset runs it — for this tree, or this
tree against an earlier checkout (``--baseline DIR``, alternating runs, medians, ratio).

The questions are template-quizzer questions on the generated academic graph (seeded, the same
for both trees); the system is SmolLM2-135M (``--model DIR`` for another folder), 3 turns of 96
tokens, the SmolLM2 judge. Target (the multi-turn engine): ≥ 3× faster than before.

    python benchmarks/eval_speed.py [--questions 100] [--samples 2] [--baseline DIR] [--reps 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(os.environ.get("GRAPHDOJO_TREE") or Path(__file__).resolve().parents[1])
sys.path.insert(0, str(ROOT))


def measure(args: argparse.Namespace) -> dict[str, float]:
    import torch

    from components.cypher.query_path import ReadOnlyQueryPath
    from components.evaluation.agents import EvalConfig
    from components.evaluation.run import SystemSpec, evaluate_systems
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.graph.sources import demo
    from components.llm.models import smollm2_hf_dir
    from components.quizzer.template import TemplateQuizzer

    torch.set_num_threads(args.threads)
    db = Path(tempfile.mkdtemp(prefix="eval-speed-")) / "db"
    load_graph(demo.generate("academic", seed=0, scale=args.scale), db)
    with LadybugBackend(db) as backend:
        schema = backend.schema()
        cands = TemplateQuizzer(ReadOnlyQueryPath(backend, schema=schema), schema, seed=0).generate(args.questions)
    rows = [
        {"id": c.id, "question": c.question, "answer": c.answer, "answer_type": c.answer_type} for c in cands if c.ok
    ]
    model = args.model or str(smollm2_hf_dir())
    config = EvalConfig(
        samples=args.samples, max_questions=len(rows), max_turns=3, max_new_tokens=96, threads=args.threads
    )
    t0 = time.perf_counter()
    report = evaluate_systems(
        [SystemSpec("base", "python_cypher", model)], rows, str(db), config, judge_model_dir=model
    )
    wall = time.perf_counter() - t0
    summary = report["systems"]["base"]["summary"]
    return {
        "wall_s": wall,
        "questions": len(rows),
        "records": len(report["records"]),
        "s_per_answer": wall / max(1, len(report["records"])),
        "valid_format": summary.get("vf") or 0.0,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--questions", type=int, default=100)
    p.add_argument("--samples", type=int, default=2)
    p.add_argument("--scale", type=int, default=2000, help="generated academic graph size")
    p.add_argument("--model", default=None, help="a local Hugging Face folder (default: SmolLM2-135M-Instruct)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", action="store_true", help="print one JSON line (for --baseline)")
    p.add_argument("--baseline", type=Path, default=None, help="a checkout of an earlier commit to compare with")
    p.add_argument("--reps", type=int, default=1)
    args = p.parse_args()
    if args.baseline is not None:
        from benchmarks._trees import compare_trees, print_ratios

        forwarded = [
            "--questions",
            str(args.questions),
            "--samples",
            str(args.samples),
            "--scale",
            str(args.scale),
            "--threads",
            str(args.threads),
        ] + (["--model", args.model] if args.model else [])
        runs = compare_trees(__file__, args.baseline, forwarded, args.reps)
        print(f"{args.questions} questions × {args.samples} samples, one system + judge, {args.threads} threads")
        print_ratios(runs)
        return
    out = measure(args)
    print(json.dumps(out) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
