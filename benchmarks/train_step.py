"""GRPO step time: multi-turn over a real tool environment vs. TRL's plain single-turn GRPO with
the same model tokens and the same total sequence length, same run.

Both runs train the same model on the same questions with the ``graphdancer`` reward:

* **multi-turn** (first) — :class:`~components.training.grpo.MultiTurn` over the Graph-CoT
  environment on the demo academic graph: up to ``turns`` model turns of ``tokens_per_turn``
  tokens, tool calls executed for real, environment tokens masked out of the loss;
* **single-turn** (the baseline) — TRL's own generation of the same number of model tokens per
  completion (``max_completion_length`` = the multi-turn run's mean model tokens, no stop), with
  the environment's share of the sequence put in the prompt instead: each question is followed by
  as many tokens of a real Graph-CoT observation as the multi-turn episodes' environment inserted
  on average — so both runs read sequences of the same total length.

It prints the mean seconds per optimizer step (TRL's ``train_runtime`` / steps) of each, the
tokens that made them, and the ratio multi / single. Target: ≤ 1.3×. The default model is a random tiny one (seconds);
``--model DIR`` takes any local Hugging Face folder (e.g. the converted SmolLM2 under
``data/models``).

    python benchmarks/train_step.py [--steps 6] [--turns 3] [--tokens-per-turn 32] [--model DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--turns", type=int, default=3)
    p.add_argument("--tokens-per-turn", type=int, default=32)
    p.add_argument("--batch", type=int, default=8, help="completions per step")
    p.add_argument("--generations", type=int, default=4)
    p.add_argument("--model", default=None)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--vllm", action="store_true", help="generate with a colocated vLLM engine (GPU only)")
    args = p.parse_args()

    from transformers import AutoTokenizer

    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.graph.sources import demo
    from components.llm.models import tiny_random_model
    from components.rollout import RolloutConfig
    from components.rubric.rewards import graphdancer_reward
    from components.tools.cot_env import GraphCoTEnvironment
    from components.tools.graph_cot import GraphCoT
    from components.tools.retriever import NodeIndex, shared_embedder
    from components.training.grpo import GRPORunConfig, MultiTurn, run_grpo

    with tempfile.TemporaryDirectory(prefix="gd-trainbench-") as tmp:
        model = args.model or str(tiny_random_model(Path(tmp) / "tiny", seed=0))
        load_graph(demo.generate("academic", seed=0, scale=300), Path(tmp) / "db")
        rows = [
            {"prompt": q, "answer": "unknown"}
            for q in (
                "Who wrote the paper 'paper_1'?",
                "Which venue published paper_2?",
                "How many papers cite paper_3?",
                "Which papers did author_4 write?",
            )
        ] * 8
        budget = args.turns * args.tokens_per_turn
        cfg = GRPORunConfig(
            max_steps=args.steps,
            batch_size=args.batch,
            num_generations=args.generations,
            learning_rate=1e-5,
            max_completion_length=budget * 8,
            threads=args.threads,
            use_vllm=args.vllm,
        )
        with LadybugBackend(Path(tmp) / "db") as backend:
            api = GraphCoT(backend, index=NodeIndex.open(backend, shared_embedder(threads=1), progress=False))
            mt = MultiTurn(
                lambda: GraphCoTEnvironment(api, max_rounds=max(1, args.turns - 1)),
                RolloutConfig(max_turns=args.turns, max_new_tokens=args.tokens_per_turn),
            )
            multi = run_grpo(model, rows, [graphdancer_reward], Path(tmp) / "multi", cfg, multi_turn=mt)
            observation = api.neighbor_check(api.retrieve_node("paper").node_ids[0], "Author").observation
        model_tokens = sum(h["model_tokens"] for h in multi.rollouts) / max(1, len(multi.rollouts))
        env_tokens = sum(h["env_tokens"] for h in multi.rollouts) / max(1, len(multi.rollouts))
        tokenizer = AutoTokenizer.from_pretrained(model)
        pad = tokenizer(observation * 20, add_special_tokens=False)["input_ids"][: max(0, round(env_tokens))]
        context = tokenizer.decode(pad)
        single_rows = [{**r, "prompt": f"{r['prompt']}\n\n<information>{context}</information>"} for r in rows]
        single = run_grpo(
            model,
            single_rows,
            [graphdancer_reward],
            Path(tmp) / "single",
            replace(cfg, max_completion_length=max(1, round(model_tokens))),
        )

    def per_step(result) -> tuple[float, float]:
        runtime = next(h["train_runtime"] for h in result.log if "train_runtime" in h)
        lengths = [h["completions/mean_length"] for h in result.log if "completions/mean_length" in h]
        return runtime / max(result.steps, 1), sum(lengths) / max(len(lengths), 1)

    (s_step, s_len), (m_step, m_len) = per_step(single), per_step(multi)
    print(
        f"model: {model}; {args.steps} steps x {args.batch} completions; multi-turn: {args.turns} turns x "
        f"{args.tokens_per_turn} tokens, {model_tokens:.1f} model + {env_tokens:.1f} environment tokens per "
        f"completion; single-turn: {round(model_tokens)} model tokens after {len(pad)} context tokens"
    )
    print(f"{'':<14}{'s/step':>10}{'model tokens/completion':>26}")
    print(f"{'single-turn':<14}{s_step:>10.2f}{s_len:>26.1f}")
    print(f"{'multi-turn':<14}{m_step:>10.2f}{m_len:>26.1f}")
    ratio = m_step / s_step
    print(f"multi / single = {ratio:.2f}x (target <= 1.3x: {'met' if ratio <= 1.3 else 'NOT met'})")


if __name__ == "__main__":
    main()
