"""Preference pairs from a checkpoint: sample M trajectories per training question in
GraphDancer's environment (the Python + Cypher sandbox, or the Graph-CoT function API with
``train.dancer_env: graph_cot`` — there only on items whose teacher trajectory fits the turn
budget) at the preset's RL temperature, top-p 0.95, rank them by
``(EM, EH, VF, −L, −I, −N)`` (:func:`~components.training.pairs.build_pair`) and keep best vs
worst; uniformly perfect / failed pools are dropped and counted.

Each pair keeps the prompt ids and, for chosen and rejected, the completion ids with their loss
masks (ready for :func:`~components.training.dpo.run_dpo`) and the texts and rank keys for
inspection.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from components.rollout.runner import SOLVER_STOPS, RolloutConfig, RolloutRunner
from components.store.artifact import Artifact, BuildContext, Layer
from components.store.fingerprint import read_parquet, write_parquet
from components.training.checkpoint import TrainConfig
from components.training.pairs import build_pair

__all__ = [
    "PREFERENCE_PAIRS",
    "PreferenceConfig",
    "build_preference_pairs",
    "preference_config",
    "sample_preference_pairs",
]


@dataclass(frozen=True)
class PreferenceConfig:
    samples: int = 8  # M
    temperature: float = 1.0
    top_p: float = 0.95
    max_questions: int = 8
    max_new_tokens: int = 160
    max_turns: int = 3
    seed: int = 0
    threads: int | None = None
    precision: str = "auto"  # components/llm/precision.py
    env: str = "python_cypher"  # components/tools/episodes.py: SOLVER_ENVS

    def params(self) -> dict[str, Any]:
        """The fingerprint's parameters (the default environment left out, as before it was a choice)."""
        out = dict(vars(self))
        if self.env == "python_cypher":
            out.pop("env")
        return out


def sample_preference_pairs(
    checkpoint_dir: str,
    rows: Sequence[Mapping[str, Any]],
    db_location: str,
    config: PreferenceConfig = PreferenceConfig(),
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``(pairs, report)`` for up to ``max_questions`` rows (``question``, ``answer``,
    ``answer_type``, ``id``); the report counts questions, pairs and drops by reason."""
    from components.llm.transformers_backend import TransformersBackend
    from components.tools.episodes import solver_envs
    from components.training.stages import graph_cot_items

    if config.env == "graph_cot":
        rows = graph_cot_items(rows, config.max_turns)
    rows = list(rows)[: config.max_questions]
    llm = TransformersBackend(checkpoint_dir, threads=config.threads, dtype=config.precision)
    rollout = RolloutConfig(
        max_turns=config.max_turns,
        max_new_tokens=config.max_new_tokens,
        temperature=config.temperature,
        top_p=config.top_p,
        seed=config.seed,
        stops=SOLVER_STOPS[config.env],
    )
    episode_rows = [
        {"question": r["question"], "answer": r["answer"], "answer_type": r.get("answer_type")} for r in rows
    ]
    try:
        with solver_envs(config.env, db_location, max_rounds=config.max_turns - 1, threads=config.threads) as make_env:
            records = RolloutRunner(llm, make_env, rollout).run(episode_rows, n=config.samples) if episode_rows else []
    finally:
        llm.close()
    pairs: list[dict[str, Any]] = []
    dropped: Counter[str] = Counter()
    for q, row in enumerate(rows):
        pool = records[q * config.samples : (q + 1) * config.samples]
        outcome = build_pair([r.stats for r in pool], row["answer"], row.get("answer_type"))
        if outcome.dropped:
            dropped[outcome.dropped] += 1
            continue
        chosen, rejected = pool[outcome.chosen], pool[outcome.rejected]
        pairs.append(
            {
                "id": row.get("id"),
                "question": row["question"],
                "answer": row["answer"],
                "prompt_ids": chosen.prompt_ids,
                "chosen_ids": chosen.completion_ids,
                "chosen_mask": chosen.loss_mask,
                "chosen_text": chosen.completion_text,
                "rejected_ids": rejected.completion_ids,
                "rejected_mask": rejected.loss_mask,
                "rejected_text": rejected.completion_text,
                "chosen_key": list(outcome.keys[outcome.chosen]),
                "rejected_key": list(outcome.keys[outcome.rejected]),
            }
        )
    stats = [r.stats for r in records]
    report = {
        "questions": len(rows),
        "samples_per_question": config.samples,
        "trajectories": len(records),
        "pairs": len(pairs),
        "pairs_per_question": len(pairs) / len(rows) if rows else 0.0,
        "dropped": dict(dropped),
        "answered_rate": sum(s.answered for s in stats) / len(stats) if stats else 0.0,
        "valid_format_rate": sum(s.valid_format for s in stats) / len(stats) if stats else 0.0,
        "mean_rounds": sum(s.rounds for s in stats) / len(stats) if stats else 0.0,
    }
    return pairs, report


def preference_config(train: TrainConfig) -> PreferenceConfig:
    """The sampling budget of a domain's training config (``pair_*`` keys of its preset)."""
    from components.training.stages import dancer_budget

    train = train.for_stage("preference_pairs")
    r = train.resolved()
    env = train.dancer_environment
    turns, tokens = dancer_budget(r, env)
    return PreferenceConfig(
        samples=r["pair_samples"],
        temperature=r["rl_temperature"],
        max_questions=r["pair_questions"],
        max_new_tokens=r["pair_new_tokens"] if env == "python_cypher" else tokens,
        max_turns=turns,
        env=env,
        seed=train.seed,
        threads=train.threads,
        precision=r["precision"],
    )


def build_preference_pairs(
    inputs: Mapping[str, Artifact], config: TrainConfig, out_dir: Path, ctx: BuildContext
) -> Artifact:
    """The ``preference_pairs`` layer: :func:`sample_preference_pairs` from the ``stage1``
    checkpoint on the training items of the ``curriculum`` input, as ``pairs.parquet``; the
    summary is the sampling report."""
    from components.curriculum import training_items

    rows = training_items(read_parquet(str(inputs["curriculum"].path)))
    pairs, report = sample_preference_pairs(
        str(inputs["stage1"].path), rows, str(inputs["snapshot"].path), preference_config(config)
    )
    path = write_parquet(pairs, out_dir / "pairs.parquet")
    return PREFERENCE_PAIRS.artifact(inputs, config, ctx, path=path, counts={"pairs": report["pairs"]}, summary=report)


PREFERENCE_PAIRS: Final = Layer(
    "preference_pairs", build_preference_pairs, lambda train: preference_config(train).params()
)
