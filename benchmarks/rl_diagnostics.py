"""GRPO's suspects on the learning table's Solver, measured without training.

The warm start of ``benchmarks/learning.yaml``'s data folder (the ``checkpoints`` asset: the
chosen CPU Solver after SFT) plays ``--questions`` questions of the **training split** (a seeded
sample, anchored by name as GraphCert GRPO's are) ``--samples`` times each in the real sandbox with
the RL stage's rollout settings (``rl_temperature``, ``rl_top_p``, ``rl_turns``, ``rl_new_tokens``
of the domain's preset), rewarded by the GraphCert reward reading the environment's parsed answer.
On those episodes (``components/training/diagnostics.py``):

1. how often the answer read from the completion's text differs from the environment's parsed one;
2. the size of GRPO's advantages (per group / per batch / unscaled) in groups whose answers are
   all wrong against mixed groups;
3. the sampler's log-probabilities (in the precision the RL stage samples with — bfloat16 where
   training runs in it — and its nucleus) against the trainer's (float32, full
   softmax) on the first ``--logprob-episodes`` episodes' model tokens, at the rollouts' top-p and
   at evaluation's 0.8.

Prints Markdown lines for docs/training.md and one JSON line; writes
``<data>/rl-diagnostics.json``. Never touches the validation or test split.

    python benchmarks/rl_diagnostics.py --data DIR [--questions 24] [--samples 4]

Run it with nothing else on the machine (2 cores).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="the learning benchmark's data folder")
    p.add_argument("--domain-file", default=str(ROOT / "benchmarks" / "learning.yaml"))
    p.add_argument("--questions", type=int, default=24, help="training questions played")
    p.add_argument("--samples", type=int, default=4, help="episodes per question (a GRPO group)")
    p.add_argument("--logprob-episodes", type=int, default=16, help="episodes whose log-probs are compared")
    args = p.parse_args()

    from components.llm.precision import resolve_precision
    from components.rollout.runner import CODE_STOPS
    from components.rubric.rewards import graphcert_reward
    from components.store import Catalog
    from components.store.artifact import Artifact
    from components.tools.episodes import python_cypher_envs
    from components.training.anchors import solver_rows
    from components.training.checkpoint import certified_train_rows
    from components.training.diagnostics import (
        advantage_sizes,
        answer_disagreement,
        logprob_gap,
        report_lines,
        summarize_groups,
    )
    from components.training.selection import answers_correct, play, score
    from components.training.stages import _certified_prompts, _rollout
    from orchestration.domains import load_domain_file

    data = Path(args.data).resolve()
    cfg = load_domain_file(Path(args.domain_file))
    catalog = Catalog(data / "catalog.duckdb")

    def art(asset: str) -> Artifact:
        rec = catalog.latest(asset, cfg.name)
        if rec is None or rec.path is None:
            raise SystemExit(f"no {asset} in {data}: run benchmarks/learning.py first")
        return Artifact.from_record(rec)

    start, snapshot = art("checkpoints"), art("graph_snapshot")
    train = certified_train_rows(art("certified_dataset"), art("curriculum_splits"))
    chosen = random.Random(cfg.train.seed).sample(train, min(args.questions, len(train)))
    rows = _certified_prompts(solver_rows(chosen, str(snapshot.path))[0])
    r = cfg.train.resolved()
    rollout = _rollout(r, cfg.train, CODE_STOPS)
    t0 = time.perf_counter()
    from components.llm.transformers_backend import TransformersBackend

    backend = TransformersBackend(str(start.path), threads=cfg.train.threads, dtype=cfg.train.precision)
    try:
        with python_cypher_envs(str(snapshot.path), max_rounds=max(1, r["rl_turns"] - 1)) as make_env:
            records = play(backend, rows, make_env, rollout, args.samples)
    finally:
        backend.close()
    play_s = time.perf_counter() - t0
    repeated = [row for row in rows for _ in range(args.samples)]
    rewards = score(graphcert_reward, records, repeated)
    correct = answers_correct(records, repeated)
    subset = records[: args.logprob_episodes]
    sampling = resolve_precision(cfg.train.precision)  # the RL stage samples from a copy in this precision
    result = {
        "domain": cfg.name,
        "checkpoint": str(start.path),
        "questions": len(rows),
        "samples": args.samples,
        "rollout": {"temperature": rollout.temperature, "top_p": rollout.top_p, "turns": rollout.max_turns},
        "em": sum(correct) / max(1, len(correct)),
        "disagreement": answer_disagreement(records),
        "advantages": advantage_sizes(summarize_groups(rewards, args.samples), summarize_groups(correct, args.samples)),
        "logprobs": logprob_gap(
            str(start.path), subset, rollout.temperature, rollout.top_p, cfg.train.threads, sampling
        ),
        "logprobs_at_eval_top_p": logprob_gap(
            str(start.path), subset, rollout.temperature, 0.8, cfg.train.threads, sampling
        ),
        "play_s": round(play_s, 1),
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    (data / "rl-diagnostics.json").write_text(json.dumps(result, indent=2))
    when = time.strftime("%Y-%m-%d")
    print(f"## RL diagnostics ({cfg.name}, {len(rows)} training questions × {args.samples}, {when})\n")
    print(f"- per-episode EM of the warm start at the rollouts' settings: {result['em']:.3f}")
    print("\n".join(report_lines(result)))
    g = result["logprobs_at_eval_top_p"]
    print(
        f"- the same tokens scored in the nucleus at top-p 0.8: mean {g['mean_diff']:+.4f}, "
        f"{g['outside_nucleus']} of {g['tokens'] + g['outside_nucleus']} tokens outside it"
    )
    print(f"\nplayed in {play_s:.0f} s; total {result['wall_s']:.0f} s")
    print(
        json.dumps(
            {k: v for k, v in result.items() if k != "disagreement"} | {"disagree": result["disagreement"]["share"]}
        )
    )


if __name__ == "__main__":
    main()
