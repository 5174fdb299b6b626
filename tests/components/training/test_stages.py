"""The RL stages' own logic on real parts: the curriculum order of GraphDancer's prompts and pairs,
the DPO stage on a real tiny model (pairs taken in curriculum order, margin and curves recorded),
the curves read from TRL's log, and GRAIN's teacher trajectories through the real graph-IR
environment."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import torch

from components.curriculum.sampler import level_probabilities
from components.training.checkpoint import TrainConfig
from components.training.stages import curriculum_order, curves, graphdancer_dpo


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from components.llm.models import tiny_random_model

    return tiny_random_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


def _items() -> list[dict]:
    return (
        [{"id": f"e{i}", "level": "easy"} for i in range(20)]
        + [{"id": f"m{i}", "level": "medium"} for i in range(20)]
        + [{"id": f"h{i}", "level": "hard"} for i in range(20)]
        + [{"id": "ood", "level": "easy", "ood": True}]
    )


def test_curriculum_order_follows_the_sampler() -> None:
    steps, per_step = 10, 400
    ordered = curriculum_order(_items(), steps, per_step, seed=1)
    assert len(ordered) == steps * per_step and all(not it.get("ood") for it in ordered)
    first = Counter(it["level"] for it in ordered[:per_step])
    last = Counter(it["level"] for it in ordered[-per_step:])
    p0, p_end = level_probabilities(0, steps), level_probabilities(steps - 1, steps)
    # step 0 draws levels by p(0, ·), the last step by p(T − 1, ·) (binomial 4-sigma bands)
    for counts, p in ((first, p0), (last, p_end)):
        for level, prob in zip(("easy", "medium", "hard"), p, strict=True):
            sigma = (per_step * prob * (1 - prob)) ** 0.5
            assert abs(counts[level] - per_step * prob) <= 4 * sigma + 1, (level, counts, p)
    assert first["easy"] > last["easy"] and first["hard"] < last["hard"] + 1
    with pytest.raises(ValueError, match="no items"):
        curriculum_order([{"id": "x", "level": "easy", "ood": True}], 2, 2)


def test_curves_from_a_trl_log() -> None:
    log = [
        {"loss": 0.5, "reward": 0.1, "kl": 0.0, "step": 1},
        {"train_runtime": 3.0},
        {"loss": 0.4, "reward": 0.3, "kl": 0.02, "step": 2},
    ]
    out = curves(log, [{"tool_call_rate": 0.25, "valid_format": 0.0}, {"tool_call_rate": 0.5, "valid_format": 0.5}])
    assert [(c["step"], c["reward"], c["kl"], c["tool_call_rate"]) for c in out] == [
        (1, 0.1, 0.0, 0.25),
        (2, 0.3, 0.02, 0.5),
    ]
    assert curves([{"loss": 1.0, "rewards/margins": 0.2}])[0]["margin"] == 0.2


def test_dpo_stage_on_curriculum_ordered_pairs(tiny_model: Path, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    prompt = [1, 5, 9, 13]
    pairs = [
        {
            "id": f"q{i}",
            "prompt_ids": prompt,
            "chosen_ids": [21, 22, 40, 23],
            "chosen_mask": [1, 1, 0, 1],
            "rejected_ids": [30, 40, 31],
            "rejected_mask": [1, 0, 1],
        }
        for i in range(4)
    ]
    levels = {"q0": "easy", "q1": "easy", "q2": "medium", "q3": "hard"}
    config = TrainConfig(preset="cpu-tiny", threads=1)
    result = graphdancer_dpo(tiny_model, pairs, levels, config, tmp_path / "dpo", data_fingerprint="fp", domain="toy")
    assert result.method == "graphdancer-dpo" and len(result.curves) == config.resolved()["dpo_steps"]
    assert all(c["margin"] is not None for c in result.curves) and result.curves[0]["margin"] == pytest.approx(
        0, abs=1e-6
    )
    card = (tmp_path / "dpo" / "README.md").read_text()
    assert "frozen stage-1 checkpoint" in card and "`fp`" in card and "| margin |" in card
    assert json.loads((tmp_path / "dpo" / "training_log.json").read_text())["method"] == "graphdancer-dpo"
    with pytest.raises(ValueError, match="no preference pairs"):
        graphdancer_dpo(tiny_model, [], levels, config, tmp_path / "none", data_fingerprint="fp", domain="toy")


def test_grain_teacher_trajectories_run_the_real_solver(tiny_model: Path) -> None:
    from transformers import AutoTokenizer

    from components.evaluation.grit import generate_items
    from components.rollout.runner import STOPS
    from components.rubric.rewards import grain_reward
    from components.tools.episodes import GRAPH_IR_SYSTEM_PROMPT, GraphIREnvironment
    from components.training.teacher import grain_teacher_steps, teacher_records

    items = [it.to_dict() for it in generate_items(6, sizes=(4, 6))]
    broken = {**items[0], "gold_ir": {"problem_type": "shortest_path", "graph": {"data": {}}}}  # invalid IR
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    records, dropped = teacher_records(
        items + [broken],
        grain_teacher_steps,
        lambda: GraphIREnvironment(max_rounds=2),
        tokenizer,
        stops=STOPS,
        system_prompt=GRAPH_IR_SYSTEM_PROMPT,
    )
    assert len(records) == 6 and len(dropped) == 1
    for rec, item in zip(records, items, strict=True):
        assert rec.stats.answer == item["answer"] and "<result>" in rec.completion_text
        assert 0 < sum(rec.loss_mask) < len(rec.loss_mask)  # the solver's reply is masked
        # the teacher trajectory earns the full grain reward (correct, exact structure, format)
        assert grain_reward(
            [rec.completion_text], answer=[item["answer"]], gold_ir=[item["gold_ir"]], answer_type=[item["answer_type"]]
        ) == [pytest.approx(1.0)]


def test_grain_rows_survive_the_arrow_dataset() -> None:
    """Regression: gold IRs as dicts were unified into one Arrow struct with null weights."""
    from datasets import Dataset

    from components.evaluation.grit import generate_items
    from components.rubric.rewards import grain_reward
    from components.training.stages import grain_rows

    items = [it.to_dict() for it in generate_items(24, sizes=(4, 6))]
    assert any(it["gold_ir"]["graph"]["weighted"] for it in items)
    rows = list(Dataset.from_list(grain_rows(items)))
    calls = [f"<graph>{json.dumps(it['gold_ir'])}</graph><answer>{it['answer']}</answer>" for it in items]
    rewards = grain_reward(
        calls,
        answer=[r["answer"] for r in rows],
        gold_ir=[r["gold_ir"] for r in rows],
        answer_type=[r["answer_type"] for r in rows],
    )
    assert rewards == [pytest.approx(1.0)] * len(items)


def test_an_rl_budget_does_not_change_the_warm_start_fingerprint() -> None:
    from components.store.artifact import Artifact
    from components.training.checkpoint import CHECKPOINTS, TrainConfig

    inputs = {
        name: Artifact(layer, "lab", f"fp-{name}", None)
        for name, layer in (
            ("certified", "certified_dataset"),
            ("curriculum", "curriculum_splits"),
            ("snapshot", "graph_snapshot"),
        )
    }
    base = CHECKPOINTS.fingerprint(inputs, TrainConfig(preset="cpu-demo"))
    assert CHECKPOINTS.fingerprint(inputs, TrainConfig(preset="cpu-demo", budgets={"rl_steps": 7})) == base
    assert CHECKPOINTS.fingerprint(inputs, TrainConfig(preset="cpu-demo", budgets={"dpo_steps": 3})) == base
    assert CHECKPOINTS.fingerprint(inputs, TrainConfig(preset="cpu-demo", max_steps=3)) != base
    fp32 = CHECKPOINTS.fingerprint(inputs, TrainConfig(preset="cpu-demo", precision="float32"))
    assert fp32 != CHECKPOINTS.fingerprint(inputs, TrainConfig(preset="cpu-demo", precision="bfloat16"))


def test_the_graphdancer_stage1_choice_fingerprints_only_graphdancer() -> None:
    from components.store.artifact import Artifact
    from components.training.stages import GRAIN_CHECKPOINT, GRAPHCERT_GRPO, GRAPHDANCER_RL

    inputs = {"checkpoint": Artifact("checkpoints", "lab", "fp-ckpt", None)}
    unset = TrainConfig(preset="cpu-demo")
    # GraphDancer as published by default: PPO in the Graph-CoT API, both named in its fingerprint
    assert (unset.dancer_stage1, unset.dancer_environment) == ("ppo", "graph_cot")
    assert unset.resolved()["dancer_stage1"] == "ppo" and unset.resolved()["dancer_env"] == "graph_cot"
    ppo = TrainConfig(preset="cpu-demo", dancer_stage1="ppo", dancer_env="graph_cot")
    assert GRAPHDANCER_RL.fingerprint(inputs, ppo) == GRAPHDANCER_RL.fingerprint(inputs, unset)
    others = [
        TrainConfig(preset="cpu-demo", dancer_stage1="grpo"),
        TrainConfig(preset="cpu-demo", dancer_env="python_cypher"),
    ]
    for other in others:
        assert GRAPHDANCER_RL.fingerprint(inputs, other) != GRAPHDANCER_RL.fingerprint(inputs, unset)
        for layer in (GRAPHCERT_GRPO, GRAIN_CHECKPOINT):
            assert layer.fingerprint(inputs, other) == layer.fingerprint(inputs, unset)
    for wrong in ({"dancer_stage1": None}, {"dancer_stage1": "a2c"}, {"dancer_env": "cypher"}):
        with pytest.raises(ValueError, match="dancer_"):
            TrainConfig(preset="cpu-demo", **wrong)


def test_graph_cot_warm_start_says_what_to_change_when_no_trajectory_fits(tmp_path: Path) -> None:
    """GraphDancer's default environment needs teacher trajectories within its turn budget: the
    error names the fix — the curriculum option when none exists, else the budget the shortest needs."""
    from components.training.stages import graph_cot_warm_start

    config = TrainConfig(preset="cpu-tiny", budgets={"dancer_turns": 3})
    kw = {"data_fingerprint": "fp", "domain": "toy"}
    bare = [{"question": "q", "answer": "a", "trajectory_json": None}]
    with pytest.raises(ValueError, match=r"none has a teacher trajectory: set `curriculum: \{trajectories: true\}`"):
        graph_cot_warm_start(tmp_path, bare, "unused", config, tmp_path / "out", **kw)
    long = [{**bare[0], "trajectory_json": json.dumps({"rounds": [{}] * n})} for n in (6, 4)]
    with pytest.raises(
        ValueError, match="within 2 calls .* takes 4 calls: raise train.budgets.dancer_turns to at least 5"
    ):
        graph_cot_warm_start(tmp_path, bare + long, "unused", config, tmp_path / "out", **kw)
    assert not (tmp_path / "out").exists()


def test_ppo_critic_warmup_must_leave_the_policy_a_step() -> None:
    """With PPO (the default) the critic-only warm-up must be shorter than stage 1; the CPU presets
    warm the critic up for one step of their two (docs/training.md)."""
    for preset in ("cpu-tiny", "cpu-demo"):
        r = TrainConfig(preset=preset).resolved()
        assert r["dancer_critic_warmup"] == 1 < r["dancer_steps"]
    with pytest.raises(ValueError, match="dancer_critic_warmup .* must be below dancer_steps"):
        TrainConfig(preset="cpu-tiny", budgets={"dancer_critic_warmup": 2})
    with pytest.raises(ValueError, match="dancer_critic_warmup"):
        TrainConfig(preset="cpu-learn", budgets={"dancer_steps": 2, "dancer_critic_warmup": 3})
    # a shorter stage 1 than the preset's caps the preset's warm-up, so the policy still trains
    assert TrainConfig(preset="cpu-demo", budgets={"dancer_steps": 1}).resolved()["dancer_critic_warmup"] == 0
    assert TrainConfig(preset="cpu-learn", budgets={"dancer_steps": 3}).resolved()["dancer_critic_warmup"] == 1
    # GRPO has no critic: the warm-up budget is not read
    assert TrainConfig(preset="cpu-tiny", dancer_stage1="grpo", budgets={"dancer_critic_warmup": 2})


def test_graphdancer_stage1_as_ppo_with_a_critic(tiny_model: Path, tmp_path: Path) -> None:
    """``dancer_stage1: ppo`` trains stage 1 with PPO over real Python + Cypher episodes in the
    curriculum order: one curve point per step (the first trains the critic alone), the value head
    saved beside the weights, a validation curve whose best point is the one kept, and the model
    card naming the algorithm that ran."""
    from components.graph.load import load_graph
    from components.training.ppo import VALUE_HEAD_FILE
    from components.training.stages import graphdancer_rl
    from tests.components.tools.test_graph_cot import library_graph

    load_graph(library_graph(), tmp_path / "db")
    items = [
        {"question": f"Who wrote paper p{i % 3 + 1}?", "answer": "Ann Lee", "answer_type": "entity", "level": lv}
        for i, lv in enumerate(["easy", "medium", "easy", "hard", "medium", "easy"])
    ]
    config = TrainConfig(
        preset="cpu-tiny",
        threads=1,
        precision="float32",
        dancer_stage1="ppo",
        dancer_env="python_cypher",
        budgets={"rl_probe": 0, "dancer_critic_warmup": 1},
    )
    result = graphdancer_rl(
        tiny_model,
        items,
        str(tmp_path / "db"),
        config,
        tmp_path / "rl",
        data_fingerprint="fp",
        domain="toy",
        validation=items[:2],
    )
    steps = config.resolved()["dancer_steps"]
    log = json.loads((tmp_path / "rl" / "ppo_log.json").read_text())
    assert [c["critic_only"] for c in log["curves"]] == [True] + [False] * (steps - 1)
    # validated before training and after every step (cpu-tiny: rl_val_every 1); the kept point is the best
    assert [p["step"] for p in result.validation] == list(range(steps + 1))
    ranks = [(p["em"], p["reward"]) for p in result.validation]  # Validation.rank: EM, then reward; first best
    assert result.chosen_step == log["chosen_step"] == ranks.index(max(ranks))
    assert result.method == "graphdancer-rl" and len(result.curves) == steps
    assert all(
        c["reward"] is not None and c["kl"] is not None and c["tool_call_rate"] is not None for c in result.curves
    )
    assert (tmp_path / "rl" / VALUE_HEAD_FILE).is_file()
    card = (tmp_path / "rl" / "README.md").read_text()
    assert "Stage 1 ran PPO with a critic" in card and "the first 1 step(s) train the critic alone" in card
    assert json.loads((tmp_path / "rl" / "ppo_log.json").read_text())["config"]["clip"] == 0.2
    with pytest.raises(ValueError, match="dancer_stage1"):
        TrainConfig(preset="cpu-tiny", dancer_stage1="a2c")


def test_rl_choices_are_checked_and_reach_the_trainer_without_touching_the_warm_start() -> None:
    """``rl_advantages`` / ``rl_probe_by`` / ``rl_beta`` / ``rl_top_p``: checked when the domain is
    read, the defaults spelled out fingerprint as unset, a choice fingerprints GraphCert GRPO but
    not the warm start, and it reaches TRL's config and the rollouts."""
    from components.store.artifact import Artifact
    from components.training.checkpoint import CHECKPOINTS
    from components.training.grpo import grpo_args
    from components.training.stages import GRAPHCERT_GRPO, _grpo_config, _rollout

    with pytest.raises(ValueError, match="rl_advantages must be one of"):
        TrainConfig(preset="cpu-demo", rl_advantages="per-token")
    with pytest.raises(ValueError, match="rl_probe_by must be one of"):
        TrainConfig(preset="cpu-demo", rl_probe_by="length")
    inputs = {
        name: Artifact(layer, "lab", f"fp-{name}", None)
        for name, layer in (
            ("checkpoint", "checkpoints"),
            ("certified", "certified_dataset"),
            ("curriculum", "curriculum_splits"),
            ("snapshot", "graph_snapshot"),
        )
    }
    unset = TrainConfig(preset="cpu-demo")
    spelled = TrainConfig(preset="cpu-demo", rl_advantages="group", rl_probe_by="answer")
    chosen = TrainConfig(preset="cpu-demo", rl_advantages="none", budgets={"rl_beta": 0.01, "rl_top_p": 0.8})
    assert GRAPHCERT_GRPO.fingerprint(inputs, spelled) == GRAPHCERT_GRPO.fingerprint(inputs, unset)
    assert GRAPHCERT_GRPO.fingerprint(inputs, chosen) != GRAPHCERT_GRPO.fingerprint(inputs, unset)
    assert CHECKPOINTS.fingerprint(inputs, chosen) == CHECKPOINTS.fingerprint(inputs, unset)
    r = chosen.resolved()
    args = grpo_args(_grpo_config(r, chosen, steps=2), "/tmp/unused")
    assert (args.scale_rewards, args.beta) == ("none", 0.01)
    assert grpo_args(_grpo_config(unset.resolved(), unset, steps=2), "/tmp/unused").scale_rewards == "group"
    assert _rollout(r, chosen, ("</answer>",)).top_p == 0.8
    # rl_beta 0 turns the KL term off (TRL then loads no reference model); negative is an error
    no_kl = TrainConfig(preset="cpu-demo", budgets={"rl_beta": 0})
    assert grpo_args(_grpo_config(no_kl.resolved(), no_kl, steps=2), "/tmp/unused").beta == 0
    with pytest.raises(ValueError, match="rl_beta must be a positive number \\(or 0: off\\)"):
        TrainConfig(preset="cpu-demo", budgets={"rl_beta": -1e-4})
