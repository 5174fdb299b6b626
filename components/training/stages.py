"""The RL stages of a domain's solver, each a function of the domain's
:class:`~components.training.checkpoint.TrainConfig` that writes a Hugging Face folder with a
model card, ``training_log.json`` and per-step curves (loss, reward, KL, tool-call rate).

* :func:`graphcert_grpo` — **GraphCert**: multi-turn GRPO from the warm-start checkpoint in the
  Python + Cypher sandbox with the ``graphcert`` reward (answer F1 + 0.1·(1 − a)·S_evidence of the
  marked queries against the certified evidence); environment tokens masked.
* :func:`graphdancer_rl` — **GraphDancer stage 1** with the ``graphdancer`` reward: GRPO
  (group-normalised advantages; the default — TRL 1.16 has no PPO trainer) or, with
  ``train.dancer_stage1: ppo``, PPO with a critic (:mod:`components.training.ppo`); the
  prompts follow the curriculum sampler ``p(t, k)``: step t's questions are drawn by level from
  the training split (:func:`curriculum_order`) and fed in that order (no shuffling).
* :func:`graphdancer_dpo` — **GraphDancer stage 2**: masked DPO from the stage-1 checkpoint
  (the frozen reference) on the preference pairs, pairs ordered by the same curriculum.
* :func:`grain_stage` — **GRAIN**: SFT on teacher trajectories (the gold graph IR, the solver's
  reply, the answer) of GRIT-style tasks under isomorphism-preserving renaming, then multi-turn
  GRPO in the graph-IR environment with the ``grain`` reward.

GraphDancer's environment is ``train.dancer_env``: by default the Python + Cypher sandbox,
continuing GraphCert's Cypher warm start; with ``graph_cot`` its own Graph-CoT function API —
:func:`graph_cot_warm_start` (SFT from the base model on the curriculum's Graph-CoT teacher
trajectories, saved as ``warm_start/`` inside the stage-1 artifact), then stage 1, the preference
pairs and the evaluation rows in that environment with the ``dancer_turns`` budget, on the items
whose trajectory fits it (:func:`graph_cot_items`). The model cards name the environment.

Budgets come from the preset (``rl_*``, ``dpo_*``, ``grain_*`` keys of
:data:`~components.training.checkpoint.PRESETS`): seconds-long on ``cpu-tiny``, a handful of steps
on ``cpu-demo``, the methods' reference budgets on ``gpu`` (docs/methods.md, "Training").
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from components.curriculum.sampler import LEVELS, CurriculumSampler
from components.store.artifact import Artifact, BuildContext, Layer
from components.store.fingerprint import read_parquet
from components.training._common import work_folder
from components.training.checkpoint import (
    CheckpointResult,
    TrainConfig,
    base_model_dir,
    certified_train_rows,
    stage_start,
    write_checkpoint_files,
)
from components.training.rft import RFT_TEXT

__all__ = [
    "DANCER_WARM_START",
    "GRAIN_CHECKPOINT",
    "GRAPHCERT_GRPO",
    "GRAPHDANCER_DPO",
    "GRAPHDANCER_RL",
    "METHODS",
    "build_grain_checkpoint",
    "build_graphcert_grpo",
    "build_graphdancer_dpo",
    "build_graphdancer_rl",
    "curriculum_order",
    "curves",
    "dancer_budget",
    "graph_cot_items",
    "graph_cot_warm_start",
    "graphcert_grpo",
    "graphdancer_dpo",
    "graphdancer_rl",
    "grain_rows",
    "grain_stage",
]

#: the Graph-CoT warm start's folder inside the ``graphdancer_rl`` artifact (``train.dancer_env: graph_cot``)
DANCER_WARM_START: Final = "warm_start"

METHODS: Final = {
    "graphcert-rft": RFT_TEXT,
    "graphcert-grpo": "GraphCert: multi-turn GRPO (TRL 1.16 `GRPOTrainer`, `rollout_func`) in the Python + Cypher "
    "sandbox with the graphcert reward R = a + 0.1·(1 − a)·e; environment tokens masked.",
    "graphdancer-rl": "GraphDancer stage 1 with the graphdancer reward over prompts drawn by the easy-to-hard "
    "curriculum sampler p(t, k): the source's PPO with a critic (the default: value head, token-level GAE over "
    "model tokens, clipped policy and value losses, KL penalty to the frozen start; components/training/ppo.py) "
    "or, with `train.dancer_stage1: grpo`, GRPO (group-normalised advantages, TRL 1.16 `GRPOTrainer`); "
    "Environment: the source's Graph-CoT function API from a Graph-CoT warm start by default, or with "
    "`train.dancer_env: python_cypher` the Python + Cypher sandbox from the Cypher warm start. The notes "
    "below name the algorithm and environment that ran.",
    "graphdancer-warm-start": "GraphDancer's warm start in its own environment: SFT on Graph-CoT teacher "
    "trajectories (RetrieveNode, then NeighborCheck / NodeFeature / NodeDegree rounds executed for real, the "
    "answer derived from the observations) of certified training items; observations masked out of the loss.",
    "graphdancer-dpo": "GraphDancer stage 2: masked DPO (TRL 1.16 `DPOTrainer`, environment tokens excluded from "
    "the sequence log-probabilities) from the stage-1 checkpoint, which is also the frozen "
    "reference, on best-vs-worst preference pairs ordered by the same curriculum.",
    "grain": "GRAIN: SFT on teacher trajectories (gold graph IR → solver reply → answer) of GRIT-style tasks under "
    "isomorphism-preserving renaming, then multi-turn GRPO in the graph-IR environment with the grain "
    "reward 0.5·correct + 0.4·structure + 0.1·format.",
}


def curves(log: Sequence[Mapping[str, Any]], rollouts: Sequence[Mapping[str, float]] = ()) -> list[dict[str, Any]]:
    """Per-step curves from a TRL log history (one entry per optimizer step) and, for multi-turn
    runs, the rollout summaries of the same steps: ``loss``, ``reward``, ``kl``, ``tool_call_rate``,
    ``valid_format``, ``nonzero_advantage`` (the share of groups whose rewards differ — the only
    ones GRPO learns from; TRL logs the complement) (``None`` where a run has no such quantity),
    DPO's ``margin`` and ``step_s``, the step's seconds (rollouts included)."""
    steps = [h for h in log if "loss" in h]
    out = []
    for i, h in enumerate(steps):
        roll = rollouts[i] if i < len(rollouts) else {}
        out.append(
            {
                "step": int(h.get("step", i + 1)),
                "loss": float(h["loss"]),
                "reward": float(h["reward"]) if "reward" in h else None,
                "kl": float(h["kl"]) if "kl" in h else None,
                "tool_call_rate": roll.get("tool_call_rate"),
                "valid_format": roll.get("valid_format"),
                "nonzero_advantage": 1.0 - float(h["frac_reward_zero_std"]) if "frac_reward_zero_std" in h else None,
                "margin": float(h["rewards/margins"]) if "rewards/margins" in h else None,
                "step_s": float(h["step_time"]) if "step_time" in h else None,
            }
        )
    return out


def curriculum_order(
    items: Sequence[Mapping[str, Any]], steps: int, per_step: int, *, seed: int = 0, uniform: bool = False
) -> list[Mapping[str, Any]]:
    """``steps × per_step`` items in the curriculum's order: at step t a level is drawn by
    ``p(t, k)`` (levels without items get no mass), then an item of it uniformly; ``uniform``
    (the NoCurriculum ablation): every item equally likely at every step. OOD items are never
    drawn. Raises ``ValueError`` when no item is trainable."""
    if uniform:
        import random

        pool = [it for it in items if not it.get("ood") and it.get("level") in LEVELS]
        if not pool:
            raise ValueError("no trainable item (every item is OOD or has no level)")
        rng = random.Random(seed)
        return [rng.choice(pool) for _ in range(steps * per_step)]
    by_level: dict[str, list[int]] = {lv: [] for lv in LEVELS}
    for i, it in enumerate(items):
        if not it.get("ood") and it.get("level") in by_level:
            by_level[str(it["level"])].append(i)
    sampler = CurriculumSampler(by_level, total_steps=max(1, steps), seed=seed)
    return [items[i] for _ in range(steps) for _level, i in sampler.sample(per_step)]


def _grpo_config(
    r: Mapping[str, Any], config: TrainConfig, *, steps: int, shuffle: bool = True, resumable: bool = False
) -> Any:
    """TRL's run config of an RL stage; ``resumable``: a checkpoint at every validation point
    (``rl_val_every`` steps) in the stage's work folder."""
    from components.training.grpo import GRPORunConfig

    return GRPORunConfig(
        max_steps=steps,
        learning_rate=r["rl_learning_rate"],
        batch_size=r["rl_batch"],
        num_generations=r["rl_generations"],
        max_completion_length=r["rl_turns"] * r["rl_new_tokens"] + 1024,
        temperature=r["rl_temperature"],  # TRL scores the sampled tokens at this temperature
        beta=r["rl_beta"],
        epsilon=0.2,
        scale_rewards=config.rl_advantages or "group",
        seed=config.seed,
        threads=config.threads,
        precision=config.precision,
        shuffle=shuffle,
        use_vllm=config.preset == "gpu",
        vllm_mode=config.vllm_mode or "colocate",
        vllm_server_url=config.vllm_server_url,
        save_every=int(r["rl_val_every"]) if resumable else 0,
    )


def _rollout(
    r: Mapping[str, Any],
    config: TrainConfig,
    stops: Sequence[str],
    system_prompt: str | None = None,
    new_tokens: int | None = None,
    turns: int | None = None,
) -> Any:
    from components.rollout.runner import RolloutConfig

    return RolloutConfig(
        max_turns=turns or r["rl_turns"],
        max_new_tokens=new_tokens or r["rl_new_tokens"],
        temperature=r["rl_temperature"],
        top_p=r["rl_top_p"],
        seed=config.seed,
        stops=tuple(stops),
        system_prompt=system_prompt,
    )


def _used(r: Mapping[str, Any], steps: int) -> int:
    """How many distinct questions an RL stage of ``steps`` steps trains on: ``rl_questions``, or
    when the questions are probed only as many as its steps use (``rl_batch / rl_generations``
    per step) — so the probe's choice is what the trainer draws from."""
    used = int(steps) * max(1, int(r["rl_batch"]) // int(r["rl_generations"]))
    return min(int(r["rl_questions"]), used) if r["rl_probe"] else int(r["rl_questions"])


def _plan(
    start_dir: str | Path,
    data: Sequence[dict[str, Any]],
    validation: Sequence[dict[str, Any]],
    make_env: Any,
    rollout: Any,
    r: Mapping[str, Any],
    config: TrainConfig,
    reward: Any,
    want: int,
    prepare: Callable[[list[Any]], list[dict[str, Any]]] = list,
) -> tuple[list[dict[str, Any]], Any, dict[str, Any]]:
    """``(training rows, MultiTurn, selection report)`` of an RL stage: with ``rl_probe``, that many
    rows (a seeded sample) are played ``rl_probe_samples`` times by ``start_dir`` and the ``want``
    rows it solves sometimes (by ``train.rl_probe_by``: answer correctness, or reward) come first
    (:func:`~components.training.selection.sometimes_solved`); else the first ``want`` rows. With
    ``rl_val_questions``, the first that many ``validation`` rows make the validation curve, whose
    best point (EM, then reward) is the checkpoint kept. ``prepare`` turns raw rows into prompt rows; only the rows used
    go through it (anchoring runs programs)."""
    import random

    from components.training.grpo import MultiTurn, Validation
    from components.training.selection import probe, sometimes_solved

    report: dict[str, Any] = {}
    rows = list(data)
    if r["rl_probe"] and rows:
        from components.llm.transformers_backend import TransformersBackend

        candidates = prepare(random.Random(config.seed).sample(rows, min(len(rows), max(int(r["rl_probe"]), want))))
        by = config.rl_probe_by or "answer"
        backend = TransformersBackend(start_dir, threads=config.threads, dtype=config.precision)
        try:
            groups = probe(backend, candidates, make_env, rollout, reward, int(r["rl_probe_samples"]), by=by)
        finally:
            backend.close()
        picked, report = sometimes_solved(candidates, groups, want, seed=config.seed)
        report["by"] = by
        rows = [dict(x) for x in picked]
    else:
        rows = prepare(rows[:want])
    val = prepare(list(validation)[: int(r["rl_val_questions"])])
    spec = Validation(val, every=int(r["rl_val_every"]), samples=int(r["rl_val_samples"])) if val else None
    return rows, MultiTurn(make_env, rollout, validation=spec), report


def _finish(
    method: str,
    base: str | Path,
    train: Any,
    output_dir: str | Path,
    config: TrainConfig,
    extra: Mapping[str, Any],
    t0: float,
    *,
    data_fingerprint: str,
    domain: str,
    examples: int,
    notes: Sequence[str] = (),
    selection: Mapping[str, Any] | None = None,
) -> CheckpointResult:
    result = CheckpointResult(
        str(output_dir),
        str(base),
        list(train.losses),
        examples,
        [],
        time.perf_counter() - t0,
        {**config.resolved(), **extra, "method": method},
        method=method,
        curves=curves(train.log, getattr(train, "rollouts", ())),
        notes=list(notes),
        validation=list(getattr(train, "validation", ())),
        selection=dict(selection or {}),
        chosen_step=getattr(train, "chosen_step", None) if getattr(train, "validation", None) else None,
    )
    write_checkpoint_files(result, data_fingerprint=data_fingerprint, domain=domain, method_text=METHODS[method])
    return result


def _certified_prompts(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "prompt": r["question"],
            "answer": r["answer"],
            "answer_type": r.get("answer_type"),
            "evidence_json": r.get("evidence_json"),
        }
        for r in rows
    ]


def graphcert_grpo(
    start_dir: str | Path,
    rows: Sequence[Mapping[str, Any]],
    db_location: str,
    config: TrainConfig,
    output_dir: str | Path,
    *,
    data_fingerprint: str,
    domain: str,
    reward: Any = None,
    ablation: Mapping[str, Any] | None = None,
    validation: Sequence[Mapping[str, Any]] = (),
    work_dir: str | Path | None = None,
) -> CheckpointResult:
    """GraphCert GRPO from ``start_dir`` (the warm start) on certified training rows (``question``,
    ``answer``, ``answer_type``, ``evidence_json``, ``final_program``), the questions chosen by
    :func:`_plan` and anchored by name (:func:`~components.training.anchors.solver_rows`);
    ``validation`` (certified rows of the validation split) makes the validation curve;
    ``reward`` and ``ablation`` (its config, for the model card) are set by
    :mod:`components.training.ablations`. ``work_dir``: resumable checkpoints go there, and a
    run that finds one continues from it (:func:`~components.training.grpo.run_grpo`)."""
    from components.rollout.runner import CODE_STOPS
    from components.rubric.rewards import graphcert_reward
    from components.tools.episodes import python_cypher_envs
    from components.training.anchors import solver_rows
    from components.training.grpo import run_grpo

    t0, r = time.perf_counter(), config.resolved()
    reward = reward or graphcert_reward
    if not rows:
        raise ValueError("no training rows for GraphCert GRPO")
    with python_cypher_envs(db_location, max_rounds=max(1, r["rl_turns"] - 1)) as make_env:
        data, mt, selection = _plan(
            start_dir,
            list(rows),
            list(validation),
            make_env,
            _rollout(r, config, CODE_STOPS),
            r,
            config,
            reward,
            _used(r, r["rl_steps"]),
            prepare=lambda chosen: _certified_prompts(solver_rows(chosen, db_location)[0]),
        )
        grpo = _grpo_config(r, config, steps=r["rl_steps"], resumable=work_dir is not None)
        train = run_grpo(start_dir, data, [reward], output_dir, grpo, mt, work_dir=work_dir)
    extra = {
        "questions": len(data),
        **({"ablation": dict(ablation)} if ablation else {}),
        **({"resumed_from_step": train.resumed_from} if train.resumed_from is not None else {}),
    }
    notes = [f"Ablation: {json.dumps(dict(ablation))} (see components/training/ablations.py)."] if ablation else []
    return _finish(
        "graphcert-grpo",
        start_dir,
        train,
        output_dir,
        config,
        extra,
        t0,
        data_fingerprint=data_fingerprint,
        domain=domain,
        examples=len(data),
        notes=notes,
        selection=selection,
    )


def dancer_budget(r: Mapping[str, Any], env: str) -> tuple[int, int]:
    """``(turns, tokens per turn)`` of GraphDancer's episodes in ``env``: the ``dancer_*`` budget
    in the Graph-CoT environment (several short calls), the ``rl_*`` one in the sandbox."""
    return (
        (int(r["dancer_turns"]), int(r["dancer_new_tokens"]))
        if env == "graph_cot"
        else (r["rl_turns"], r["rl_new_tokens"])
    )


def graph_cot_items(items: Sequence[Mapping[str, Any]], turns: int) -> list[Mapping[str, Any]]:
    """The curriculum items GraphDancer trains on in the Graph-CoT environment: those with a
    teacher trajectory (``trajectory_json``) whose calls fit in ``turns − 1`` rounds — so every
    question has a known way to be answered within the episode's budget."""
    return [it for it in items if (traj := _trajectory(it)) and len(traj["rounds"]) <= turns - 1]


def _trajectory(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """A curriculum item's Graph-CoT teacher trajectory (``trajectory_json``), or None."""
    raw = item.get("trajectory_json")
    return json.loads(raw) if isinstance(raw, str) and raw not in ("", "null") else None


def graph_cot_warm_start(
    base: str | Path,
    items: Sequence[Mapping[str, Any]],
    db_location: str,
    config: TrainConfig,
    output_dir: str | Path,
    *,
    data_fingerprint: str,
    domain: str,
) -> CheckpointResult:
    """GraphDancer's warm start in its own environment: SFT from ``base`` on the Graph-CoT teacher
    trajectories of ``items`` (curriculum items of the training split; those within the
    ``dancer_turns`` budget, at most ``max_examples``), each replayed through the real
    :class:`~components.tools.cot_env.GraphCoTEnvironment` (observations masked out of the loss;
    a trajectory whose calls no longer run cleanly is dropped). Raises ``ValueError`` when the
    curriculum holds no trajectory (``curriculum.trajectories: true`` builds them)."""
    from transformers import AutoTokenizer

    from components.rollout.runner import STOPS
    from components.tools.episodes import graph_cot_envs
    from components.training.checkpoint import sft_checkpoint
    from components.training.teacher import graph_cot_teacher_steps, teacher_records

    t0, r = time.perf_counter(), config.resolved()
    turns, _ = dancer_budget(r, "graph_cot")
    usable = graph_cot_items(items, turns)[: r["max_examples"]]
    if not usable:
        calls = sorted(len(t["rounds"]) for t in map(_trajectory, items) if t)
        fix = (
            f"the shortest of their {len(calls)} teacher trajectories takes {calls[0]} calls: raise "
            f"train.budgets.dancer_turns to at least {calls[0] + 1} (calls + the answer)"
            if calls
            else "none has a teacher trajectory: set `curriculum: {trajectories: true}` in the domain YAML"
        )
        raise ValueError(
            f"no Graph-CoT teacher trajectory within {turns - 1} calls among {len(items)} training items; {fix}"
        )
    tokenizer = AutoTokenizer.from_pretrained(base)
    with graph_cot_envs(db_location, max_rounds=turns - 1, threads=config.threads) as make_env:
        records, dropped = teacher_records(usable, graph_cot_teacher_steps, make_env, tokenizer, stops=STOPS)
    return sft_checkpoint(
        base,
        records,
        dropped,
        config,
        output_dir,
        t0,
        method="graphdancer-warm-start",
        method_text=METHODS["graphdancer-warm-start"],
        data_fingerprint=data_fingerprint,
        domain=domain,
    )


def graphdancer_rl(
    start_dir: str | Path,
    items: Sequence[Mapping[str, Any]],
    db_location: str,
    config: TrainConfig,
    output_dir: str | Path,
    *,
    data_fingerprint: str,
    domain: str,
    validation: Sequence[Mapping[str, Any]] = (),
    curriculum: bool = True,
    work_dir: str | Path | None = None,
) -> CheckpointResult:
    """GraphDancer stage 1 from ``start_dir`` on curriculum rows of the training split (``level``,
    ``question``, ``answer``…), the questions chosen by :func:`_plan`, prompts in curriculum order
    (``curriculum=False``: uniform — the NoCurriculum ablation); ``validation`` (curriculum rows
    of the validation split) makes the validation curve. The environment is
    ``config.dancer_environment``; in ``graph_cot`` only items with a teacher trajectory within the
    turn budget are used (:func:`graph_cot_items`). ``work_dir``: resumable state goes there
    every ``rl_val_every`` steps, and an interrupted run continues from it (PPO and GRPO)."""
    from components.rollout.runner import SOLVER_STOPS
    from components.rubric.rewards import graphdancer_reward
    from components.tools.episodes import solver_envs
    from components.training.grpo import run_grpo

    t0, r = time.perf_counter(), config.resolved()
    env = config.dancer_environment
    turns, tokens = dancer_budget(r, env)
    if env == "graph_cot":
        items, validation = graph_cot_items(items, turns), graph_cot_items(validation, turns)
        if not items:
            raise ValueError(f"no training item has a Graph-CoT teacher trajectory within {turns - 1} calls")
    steps, per_step = r["dancer_steps"], r["rl_batch"] // r["rl_generations"]
    tagged = [{**p, "level": it.get("level"), "ood": it.get("ood")} for p, it in zip(_certified_prompts(items), items)]
    rollout = _rollout(r, config, SOLVER_STOPS[env], new_tokens=tokens, turns=turns)
    with solver_envs(env, db_location, max_rounds=max(1, turns - 1), threads=config.threads) as make_env:
        chosen, mt, selection = _plan(
            start_dir,
            tagged,
            _certified_prompts(list(validation)),
            make_env,
            rollout,
            r,
            config,
            graphdancer_reward,
            _used(r, steps),
        )
        ordered = curriculum_order(chosen, steps, per_step, seed=config.seed, uniform=not curriculum)
        levels = {lv: sum(1 for it in ordered if it.get("level") == lv) for lv in LEVELS}
        data = [{k: v for k, v in it.items() if k not in ("level", "ood")} for it in ordered]
        if config.dancer_stage1 == "ppo":
            train = _ppo_stage1(
                start_dir, data, make_env, output_dir, r, config, steps, rollout, mt.validation, work_dir
            )
            warmup = int(r["dancer_critic_warmup"])
            algorithm = (
                "PPO with a critic (value head saved as value_head.safetensors; GAE over model tokens, clipped "
                "policy / value losses, KL penalty to the frozen start; one update per step"
                + (f"; the first {warmup} step(s) train the critic alone" if warmup else "")
                + ")."
            )
        else:
            grpo = replace(
                _grpo_config(r, config, steps=steps, shuffle=False, resumable=work_dir is not None),
                max_completion_length=turns * tokens + 1024,
            )
            train = run_grpo(start_dir, data, [graphdancer_reward], output_dir, grpo, multi_turn=mt, work_dir=work_dir)
            algorithm = "GRPO (no critic, no value clip); `train.dancer_stage1: ppo` runs the source's PPO."
    where = "the Graph-CoT function API" if env == "graph_cot" else "the Python + Cypher sandbox"
    order = "uniform question sampling (NoCurriculum)" if not curriculum else "the easy-to-hard curriculum"
    return _finish(
        "graphdancer-rl",
        start_dir,
        train,
        output_dir,
        config,
        {
            "curriculum_levels_drawn": levels,
            "environment": env,
            "curriculum": curriculum,
            **({"resumed_from_step": train.resumed_from} if train.resumed_from is not None else {}),
        },
        t0,
        data_fingerprint=data_fingerprint,
        domain=domain,
        examples=len(ordered),
        notes=[f"Stage 1 ran {algorithm} Environment: {where}; prompts in {order}."],
        selection=selection,
    )


def _ppo_stage1(
    start_dir: str | Path,
    data: Sequence[Mapping[str, Any]],
    make_env: Any,
    output_dir: str | Path,
    r: Mapping[str, Any],
    config: TrainConfig,
    steps: int,
    rollout: Any,
    validation: Any = None,
    work_dir: str | Path | None = None,
) -> Any:
    """GraphDancer stage 1 as PPO (:func:`~components.training.ppo.run_ppo`) on the rows in their
    curriculum order (step t plays rows ``t·q … t·q + q − 1``, ``q = rl_batch / rl_generations``),
    with the rollout's turn, token and stop budget and SPEC §7's clip 0.2, value clip 0.5, KL
    0.001, top-p 0.8, top-k 20; critic learning rate 10× the actor's; the first
    ``dancer_critic_warmup`` steps train the critic alone. ``validation`` (a
    :class:`~components.training.grpo.Validation`): the validation curve, and the best point is the
    one saved; ``work_dir``: resumable state every ``rl_val_every`` steps. Returns what
    :func:`_finish` reads (``losses``, a TRL-shaped ``log``, per-step ``rollouts``,
    ``validation``, ``chosen_step``)."""
    from types import SimpleNamespace

    from components.rubric.rewards import graphdancer_reward
    from components.training.ppo import PPOConfig, run_ppo

    ppo = PPOConfig(
        steps=steps,
        episodes_per_step=int(r["rl_batch"]),
        samples_per_question=int(r["rl_generations"]),
        actor_lr=float(r["rl_learning_rate"]),
        critic_lr=10 * float(r["rl_learning_rate"]),
        kl_coef=0.001,
        clip=0.2,
        value_clip=0.5,
        temperature=float(r["rl_temperature"]),
        top_p=0.8,
        top_k=20,
        max_turns=int(rollout.max_turns),
        max_new_tokens=int(rollout.max_new_tokens),
        seed=config.seed,
        threads=config.threads,
        precision=config.precision,
        critic_warmup=int(r["dancer_critic_warmup"]),
        save_every=int(r["rl_val_every"]) if work_dir is not None else 0,
    )
    rows = [{"question": d["prompt"], "answer": d["answer"], "answer_type": d.get("answer_type")} for d in data]
    result = run_ppo(
        start_dir,
        rows,
        graphdancer_reward,
        make_env,
        output_dir,
        ppo,
        stops=rollout.stops,
        validation=validation,
        work_dir=work_dir,
    )
    log = [
        {"step": c["step"], "loss": c["policy_loss"], "reward": c["reward"], "kl": c["kl"], "step_time": c["step_s"]}
        for c in result.curves
    ]
    rollouts = [{"tool_call_rate": c["tool_call_rate"], "valid_format": c["valid_format"]} for c in result.curves]
    return SimpleNamespace(
        losses=[c["policy_loss"] for c in result.curves],
        log=log,
        rollouts=rollouts,
        validation=result.validation,
        chosen_step=result.chosen_step,
        resumed_from=result.resumed_from,
    )


def graphdancer_dpo(
    stage1_dir: str | Path,
    pairs: Sequence[Mapping[str, Any]],
    levels: Mapping[str, str],
    config: TrainConfig,
    output_dir: str | Path,
    *,
    data_fingerprint: str,
    domain: str,
    curriculum: bool = True,
) -> CheckpointResult:
    """GraphDancer stage 2 from ``stage1_dir`` on preference pairs (``id``, ``prompt_ids``,
    ``chosen_ids``/``chosen_mask``, ``rejected_ids``/``rejected_mask``); ``levels`` maps item id →
    curriculum level (``curriculum=False``: pairs drawn uniformly — NoCurriculum). Raises
    ``ValueError`` without pairs."""
    from components.training.dpo import DPORunConfig, preference_example, run_dpo

    if not pairs:
        raise ValueError("no preference pairs: every sampled pool was uniform (nothing to prefer)")
    t0, r = time.perf_counter(), config.resolved()
    batch = min(r["dpo_batch"], len(pairs))
    tagged = [{**p, "level": levels.get(str(p.get("id")), "easy")} for p in pairs]
    ordered = curriculum_order(tagged, r["dpo_steps"], batch, seed=config.seed, uniform=not curriculum)
    examples = [
        preference_example(
            p["prompt_ids"], (p["chosen_ids"], p["chosen_mask"]), (p["rejected_ids"], p["rejected_mask"])
        )
        for p in ordered
    ]
    train = run_dpo(
        stage1_dir,
        examples,
        output_dir,
        DPORunConfig(
            max_steps=r["dpo_steps"],
            learning_rate=r["dpo_learning_rate"],
            beta=0.1,
            batch_size=batch,
            seed=config.seed,
            threads=config.threads,
            precision=config.precision,
            ordered=True,
        ),
    )
    return _finish(
        "graphdancer-dpo",
        stage1_dir,
        train,
        output_dir,
        config,
        {"pairs": len(pairs)},
        t0,
        data_fingerprint=data_fingerprint,
        domain=domain,
        examples=len(pairs),
        notes=["Reference model: the frozen stage-1 checkpoint."],
    )


def grain_rows(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """GRPO dataset rows of GRIT items. The gold IR travels as JSON text: an Arrow table built from
    dicts whose keys differ per row (node names) unifies them into one struct and fills every
    missing key with null — a weighted edge would come back with weight ``None``."""
    return [
        {
            "prompt": it["question"],
            "answer": it["answer"],
            "answer_type": it.get("answer_type"),
            "gold_ir": json.dumps(it["gold_ir"], ensure_ascii=False),
        }
        for it in items
    ]


def grain_stage(
    items: Sequence[Mapping[str, Any]],
    config: TrainConfig,
    output_dir: str | Path,
    *,
    data_fingerprint: str,
    cache_root: Path | str | None = None,
) -> CheckpointResult:
    """GRAIN from the preset's base model: SFT on teacher trajectories of ``items`` (GRIT-style
    :class:`~components.evaluation.grit.GritItem` dicts), then GRPO with the grain reward; both
    phases' curves are in the result (SFT steps first)."""
    from transformers import AutoTokenizer

    from components.rollout.runner import STOPS
    from components.rubric.rewards import grain_reward
    from components.tools.episodes import GRAPH_IR_SYSTEM_PROMPT, GraphIREnvironment
    from components.training.grpo import MultiTurn, run_grpo
    from components.training.sft import SFTRunConfig, run_sft, sft_example
    from components.training.teacher import grain_teacher_steps, teacher_records

    t0, r = time.perf_counter(), config.resolved()
    items = list(items)[: r["grain_tasks"]]
    base = base_model_dir(config, cache_root)
    tokenizer = AutoTokenizer.from_pretrained(base)
    make_env = lambda: GraphIREnvironment(max_rounds=max(1, r["rl_turns"] - 1))  # noqa: E731
    records, dropped = teacher_records(
        items, grain_teacher_steps, make_env, tokenizer, stops=STOPS, system_prompt=GRAPH_IR_SYSTEM_PROMPT
    )
    if not records:
        raise ValueError(f"no GRAIN teacher trajectory ran cleanly ({len(dropped)} dropped)")
    out = Path(output_dir)
    warm = out.parent / f".{out.name}.sft"  # the SFT phase's model; removed once GRPO has saved
    sft = run_sft(
        base,
        [sft_example(x.prompt_ids, x.completion_ids, x.loss_mask) for x in records],
        warm,
        SFTRunConfig(
            max_steps=r["grain_sft_steps"],
            learning_rate=r["grain_learning_rate"],
            batch_size=r["batch_size"],
            max_length=4096,
            seed=config.seed,
            threads=config.threads,
            precision=config.precision,
        ),
    )
    data = grain_rows(items)
    mt = MultiTurn(make_env, _rollout(r, config, STOPS, GRAPH_IR_SYSTEM_PROMPT, r["grain_new_tokens"]))
    grpo = replace(
        _grpo_config(r, config, steps=r["rl_steps"]), max_completion_length=r["rl_turns"] * r["grain_new_tokens"] + 1024
    )
    train = run_grpo(warm, data, [grain_reward], out, grpo, multi_turn=mt)
    shutil.rmtree(warm, ignore_errors=True)
    sft_curve = [
        {
            "step": i + 1,
            "loss": loss,
            "reward": None,
            "kl": None,
            "tool_call_rate": None,
            "valid_format": None,
            "margin": None,
            "phase": "sft",
        }
        for i, loss in enumerate(sft.losses)
    ]
    result = CheckpointResult(
        str(out),
        str(base),
        list(sft.losses) + list(train.losses),
        len(records),
        dropped,
        time.perf_counter() - t0,
        {**r, "method": "grain", "tasks": len(items)},
        method="grain",
        curves=sft_curve + [{**c, "phase": "grpo"} for c in curves(train.log, train.rollouts)],
    )
    write_checkpoint_files(result, data_fingerprint=data_fingerprint, domain="grit", method_text=METHODS["grain"])
    return result


# -- the layers ------------------------------------------------------------------------------


def _trained(
    layer: Layer,
    inputs: Mapping[str, Artifact],
    config: TrainConfig,
    out_dir: Path,
    ctx: BuildContext,
    result: CheckpointResult,
    **summary: Any,
) -> Artifact:
    return layer.artifact(
        inputs, config, ctx, path=out_dir, counts={"examples": result.examples}, summary={**result.summary(), **summary}
    )


def build_graphcert_grpo(
    inputs: Mapping[str, Artifact], config: TrainConfig, out_dir: Path, ctx: BuildContext
) -> Artifact:
    """``graphcert_grpo``: :func:`graphcert_grpo` on the certified rows of the ``curriculum``
    input's training split, from the ``rft`` input when rejection-sampling fine-tuning trained a
    checkpoint (``rft_rounds`` > 0), else from the ``checkpoint`` input (the warm start)."""
    curriculum = inputs["curriculum"]
    rft = inputs.get("rft")
    start = rft if rft is not None and rft.path is not None else inputs["checkpoint"]
    rows = certified_train_rows(inputs["certified"], curriculum)  # anchored by the stage, as it uses them
    held_out = certified_train_rows(inputs["certified"], curriculum, split="validation")
    work = work_folder(ctx, GRAPHCERT_GRPO.name)
    result = graphcert_grpo(
        str(start.path),
        rows,
        str(inputs["snapshot"].path),
        config,
        out_dir,
        data_fingerprint=curriculum.fingerprint,
        domain=ctx.domain,
        validation=held_out,
        work_dir=work,
    )
    shutil.rmtree(work, ignore_errors=True)  # landed: nothing left to resume
    return _trained(GRAPHCERT_GRPO, inputs, config, out_dir, ctx, result)


def build_graphdancer_rl(
    inputs: Mapping[str, Artifact], config: TrainConfig, out_dir: Path, ctx: BuildContext
) -> Artifact:
    """``graphdancer_rl``: :func:`graphdancer_rl` on the training items of the ``curriculum``
    input — from the ``checkpoint`` input (the Cypher warm start), or with ``train.dancer_env:
    graph_cot`` from :func:`graph_cot_warm_start`, which is kept as ``warm_start/`` in the
    artifact (its own evaluation row; the NoPPO ablation starts there)."""
    from components.curriculum import split_items

    curriculum = inputs["curriculum"]
    table = read_parquet(str(curriculum.path))
    items, held_out = split_items(table, "train"), split_items(table, "validation")
    stage = config.for_stage("graphdancer_rl")
    extra: dict[str, Any] = {}
    if stage.dancer_environment == "graph_cot":
        warm = graph_cot_warm_start(
            base_model_dir(stage, ctx.data_root),
            items,
            str(inputs["snapshot"].path),
            stage,
            out_dir / DANCER_WARM_START,
            data_fingerprint=curriculum.fingerprint,
            domain=ctx.domain,
        )
        ctx.log(f"{ctx.domain}/graphdancer_rl: Graph-CoT warm start on {warm.examples} teacher trajectories")
        start: Path = Path(warm.output_dir)
        extra["warm_start"] = {"examples": warm.examples, "dropped": len(warm.dropped), "losses": warm.losses}
    else:
        start = stage_start(config, "graphdancer_rl", inputs["checkpoint"].path, ctx.data_root)
    work = work_folder(ctx, GRAPHDANCER_RL.name)
    result = graphdancer_rl(
        str(start),
        items,
        str(inputs["snapshot"].path),
        stage,
        out_dir,
        data_fingerprint=curriculum.fingerprint,
        domain=ctx.domain,
        validation=held_out,
        work_dir=work,
    )
    shutil.rmtree(work, ignore_errors=True)  # landed: nothing left to resume
    return _trained(GRAPHDANCER_RL, inputs, config, out_dir, ctx, result, environment=stage.dancer_environment, **extra)


def build_graphdancer_dpo(
    inputs: Mapping[str, Artifact], config: TrainConfig, out_dir: Path, ctx: BuildContext
) -> Artifact:
    """``graphdancer_dpo``: :func:`graphdancer_dpo` from the ``stage1`` input on the ``pairs``
    input, ordered by the ``curriculum`` input's levels. Without pairs nothing is trained: the
    artifact stores nothing and its summary says ``trained: false`` and why."""
    pairs_art = inputs["pairs"]
    pairs = read_parquet(str(pairs_art.path))
    if not pairs:
        reason = (
            f"0 preference pairs ({pairs_art.summary.get('dropped')}): the stage-1 policy's sampled pools "
            "were uniform, so there is nothing to prefer"
        )
        ctx.log(f"{ctx.domain}/graphdancer_dpo not trained: {reason}")
        return GRAPHDANCER_DPO.artifact(
            inputs, config, ctx, path=None, summary={"trained": False, "reason": reason, "pairs": 0}
        )
    levels = {str(r["id"]): r["level"] for r in read_parquet(str(inputs["curriculum"].path))}
    result = graphdancer_dpo(
        str(inputs["stage1"].path),
        pairs,
        levels,
        config.for_stage("graphdancer_dpo"),
        out_dir,
        data_fingerprint=pairs_art.fingerprint,
        domain=ctx.domain,
    )
    return _trained(GRAPHDANCER_DPO, inputs, config, out_dir, ctx, result, trained=True, pairs=len(pairs))


def build_grain_checkpoint(
    inputs: Mapping[str, Artifact], config: TrainConfig, out_dir: Path, ctx: BuildContext
) -> Artifact:
    """``grain_checkpoint``: :func:`grain_stage` on the training split of the ``tasks`` input
    (GRIT-style tasks)."""
    from components.evaluation.grit import from_row

    tasks = inputs["tasks"]
    items = [from_row(r) for r in read_parquet(str(tasks.path)) if r["split"] == "train"]
    result = grain_stage(
        items,
        config.for_stage("grain_checkpoint"),
        out_dir,
        data_fingerprint=tasks.fingerprint,
        cache_root=ctx.data_root,
    )
    return _trained(GRAIN_CHECKPOINT, inputs, config, out_dir, ctx, result)


GRAPHCERT_GRPO: Final = Layer("graphcert_grpo", build_graphcert_grpo, TrainConfig.resolved_without_dancer)
GRAPHDANCER_RL: Final = Layer("graphdancer_rl", build_graphdancer_rl, TrainConfig.resolved)
GRAPHDANCER_DPO: Final = Layer("graphdancer_dpo", build_graphdancer_dpo, TrainConfig.resolved)
GRAIN_CHECKPOINT: Final = Layer("grain_checkpoint", build_grain_checkpoint, TrainConfig.resolved_without_dancer)
