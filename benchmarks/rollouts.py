"""Solver rollout throughput vs. raw batched generation of the same tokens, same run.

The Solver's :class:`~components.rollout.runner.RolloutRunner` (what GRPO, preference sampling and
the evaluation play) runs the **warm-started model** in the Python + Cypher sandbox: every turn
of every episode is one batched ``generate_ids`` call, and between turns the sandbox runs each
episode's code. Every ``generate_ids`` call is recorded, then **replayed** against a fresh engine
on the same weights with the same token sequences and sampling parameters — the same generated
tokens, no tools, no environment. The ratio of generated tokens per second of wall time
(rollout, tool and environment time included / raw) is the overhead of the multi-turn loop.
Target: ≥ 0.8×, with tool calls executed in ≥ 50 % of the model's turns.

The episodes are questions on which the model calls a tool: a pilot episode per training
question of the demo domain is played first, and the first ``--episodes`` questions whose pilot
ran code are benchmarked (so the tool share is a property of the chosen questions, reported, not
an accident of sampling). The warm start is the latest ``checkpoints`` artifact of the default
domain in the data root (``make demo`` trains one) or ``--model DIR``.

    python benchmarks/rollouts.py [--episodes 64] [--model DIR] [--data DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class RecordingBackend:
    """Delegates to a real backend and records each ``generate_ids`` call (instrumentation, not a
    stand-in: every token comes from the model)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.tokenizer = inner, inner.tokenizer
        self.calls: list[tuple[list[list[int]], Any]] = []

    def generate_ids(self, prompts: Sequence[Sequence[int]], params: Any) -> list:
        self.calls.append(([list(p) for p in prompts], params))
        return self.inner.generate_ids(prompts, params)


def _inputs(data: Path, domain: str, model: str | None) -> tuple[str, str, list[dict[str, Any]]]:
    """``(model folder, graph folder, training rows anchored by name)`` from the data root."""
    from components.store import Catalog
    from components.store.artifact import Artifact
    from components.training.checkpoint import certified_train_rows

    catalog = Catalog(data / "catalog.duckdb")

    def art(asset: str) -> Artifact:
        rec = catalog.latest(asset, domain)
        if rec is None or rec.path is None:
            raise SystemExit(f"no {asset} artifact for {domain} in {data}: run `make demo` first")
        return Artifact.from_record(rec)

    snapshot = art("graph_snapshot")
    rows = certified_train_rows(art("certified_dataset"), art("curriculum_splits"), snapshot, limit=256)
    return model or str(art("checkpoints").path), str(snapshot.path), rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=64)
    p.add_argument("--model", default=None, help="a warm-started checkpoint folder (default: the demo's)")
    p.add_argument("--data", default=None, help="data root (default: GRAPHDOJO_DATA / ./data)")
    p.add_argument("--domain", default="academic")
    p.add_argument("--max-new-tokens", type=int, default=192)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()

    from components.llm.transformers_backend import TransformersBackend
    from components.rollout.runner import CODE_STOPS, RolloutConfig, RolloutRunner
    from components.store.paths import data_root
    from components.tools.episodes import python_cypher_envs

    if args.data:
        os.environ["GRAPHDOJO_DATA"] = args.data
    model, graph, rows = _inputs(Path(args.data) if args.data else data_root(), args.domain, args.model)
    config = RolloutConfig(
        max_turns=2, max_new_tokens=args.max_new_tokens, temperature=0.7, top_p=0.8, seed=0, stops=CODE_STOPS
    )
    tasks = [{"question": r["question"], "answer": r["answer"], "answer_type": r.get("answer_type")} for r in rows]
    with python_cypher_envs(graph, max_rounds=1) as make_env:
        pilot = TransformersBackend(model, threads=args.threads)
        picked = [
            t
            for t, rec in zip(tasks, RolloutRunner(pilot, make_env, config).run(tasks), strict=True)
            if rec.stats.valid_calls > 0
        ][: args.episodes]
        pilot.close()
        if not picked:
            raise SystemExit("the model ran code in no pilot episode: is it a warm-started checkpoint?")
        backend = TransformersBackend(model, threads=args.threads)
        rec = RecordingBackend(backend)
        t0 = time.perf_counter()
        records = RolloutRunner(rec, make_env, config).run(picked)
        rollout_s = time.perf_counter() - t0
    rollout_tokens = sum(r.stats.model_tokens for r in records)
    turns = sum(len(prompts) for prompts, _ in rec.calls)
    tool_turns = sum(r.stats.valid_calls for r in records)  # code cells the sandbox ran
    backend.close()

    raw = TransformersBackend(model, threads=args.threads)  # a fresh engine: the same cache history
    t0 = time.perf_counter()
    raw_tokens = sum(g[0].completion_tokens for prompts, params in rec.calls for g in raw.generate_ids(prompts, params))
    raw_s = time.perf_counter() - t0
    raw.close()

    rollout_tps, raw_tps = rollout_tokens / rollout_s, raw_tokens / raw_s
    ratio = rollout_tps / raw_tps
    share = tool_turns / max(1, turns)
    print(f"model {model}; {len(picked)} episodes, {len(rec.calls)} batched generate calls")
    print(f"rollout (sandbox + environment): {rollout_tokens} tokens in {rollout_s:.1f} s = {rollout_tps:.1f} tok/s")
    print(f"raw generation of the same calls: {raw_tokens} tokens in {raw_s:.1f} s = {raw_tps:.1f} tok/s")
    print(f"model turns {turns}, code run by the sandbox in {tool_turns} ({share:.0%}; target >= 50 %)")
    print(f"ratio {ratio:.2f}x (target >= 0.8x): {'PASS' if ratio >= 0.8 else 'FAIL'}")


if __name__ == "__main__":
    main()
