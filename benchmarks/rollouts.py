"""LLM Quizzer multi-turn rollout throughput vs. raw batched generation, same run.

The Quizzer runs ``--episodes`` batched episodes on a small academic graph (turn k of all
episodes is one ``generate`` call; tool execution in the sandbox between turns). Every
``generate`` call it makes is recorded, then **replayed** against the same backend with the same
conversations and sampling parameters — the same model and token budget with no tools. The
ratio of generated tokens per second of wall time (rollout, tool time included / raw) is the
overhead of the multi-turn loop. Target: >= 0.8x.

    python benchmarks/rollouts.py                       # SmolLM2-135M (CPU)
    python benchmarks/rollouts.py --model DIR --episodes 8 --max-new-tokens 128
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class RecordingBackend:
    """Delegates to a real backend and records each call (instrumentation, not a stand-in)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name, self.model_name = inner.name, inner.model_name
        self.calls: list[tuple[list, Any]] = []

    def generate(self, conversations: Sequence, params: Any) -> list:
        self.calls.append(([list(c) for c in conversations], params))
        return self.inner.generate(conversations, params)

    def close(self) -> None:
        pass


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="local HF folder (default SmolLM2-135M-Instruct)")
    p.add_argument("--episodes", type=int, default=4)
    p.add_argument("--max-turns", type=int, default=2)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()

    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.graph.sources import demo
    from components.llm import make_backend
    from components.quizzer import LLMQuizzer, LLMQuizzerConfig

    backend = make_backend("transformers", model_dir=args.model, threads=args.threads)
    rec = RecordingBackend(backend)
    with tempfile.TemporaryDirectory(prefix="gd-rollouts-") as tmp:
        load_graph(demo.generate("academic", seed=0, scale=300), Path(tmp) / "db")
        with LadybugBackend(Path(tmp) / "db") as graph:
            schema = graph.schema()
            quizzer = LLMQuizzer(
                ReadOnlyQueryPath(graph, schema=schema),
                schema,
                rec,
                seed=0,
                config=LLMQuizzerConfig(max_turns=args.max_turns, max_new_tokens=args.max_new_tokens),
            )
            backend.generate([[{"role": "user", "content": "warm up"}]], _warmup_params())
            t0 = time.perf_counter()
            cands = quizzer.generate(args.episodes)
            rollout_s = time.perf_counter() - t0
    rollout_tokens = sum(c.completion_tokens for c in cands)

    t0 = time.perf_counter()
    raw_tokens = 0
    for conversations, params in rec.calls:
        for gens in backend.generate(conversations, params):
            raw_tokens += sum(g.completion_tokens for g in gens)
    raw_s = time.perf_counter() - t0
    backend.close()

    rollout_tps, raw_tps = rollout_tokens / rollout_s, raw_tokens / raw_s
    print(
        f"model {backend.model_name}; {args.episodes} episodes, {len(rec.calls)} batched generate calls, "
        f"max_new_tokens {args.max_new_tokens}"
    )
    print(f"rollout (tools included): {rollout_tokens} tokens in {rollout_s:.1f} s = {rollout_tps:.1f} tok/s")
    print(f"raw batched generation:   {raw_tokens} tokens in {raw_s:.1f} s = {raw_tps:.1f} tok/s")
    ratio = rollout_tps / raw_tps
    print(f"ratio {ratio:.2f}x (target >= 0.8x): {'PASS' if ratio >= 0.8 else 'FAIL'}")
    reasons = sorted({c.failure_reason or "ok" for c in cands})
    turns = [t for c in cands for t in c.trace if "turn" in t]
    code_turns = sum(1 for t in turns if t.get("kind") in {"explore", "final"})
    print(f"candidates: {sum(c.ok for c in cands)} valid of {len(cands)}; outcomes {reasons}")
    print(
        f"model turns: {len(turns)}, of which ran code in the sandbox: {code_turns} "
        "(a model that writes little code leaves little tool time to measure)"
    )


def _warmup_params() -> Any:
    from components.llm import SamplingParams

    return SamplingParams(max_new_tokens=8, temperature=0.0)


if __name__ == "__main__":
    main()
