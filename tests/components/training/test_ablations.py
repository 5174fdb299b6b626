"""Ablation configs and their data selections on crafted certified rows (real grounding code)."""

from __future__ import annotations

import json

import pytest

from components.training.ablations import (
    Ablation,
    ablation_pairs,
    ablations_from,
    answer_only_reward,
    arm_order,
    cached_arm,
    select_rows,
)


def _row(i: int, status: str, admitted: bool, node: str, ok: bool = True, leaked: bool = False) -> dict:
    return {
        "id": f"c{i}",
        "status": status,
        "admitted": admitted,
        "leaked": leaked,
        "verdict": "skipped" if status != "hard_failure" else "not_judged",
        "ok": ok,
        "question": f"q{i}",
        "answer": "a",
        "answer_type": "entity",
        "start_node_json": json.dumps({"id": node, "label": "Paper"}),
    }


CERTIFIED = (
    [_row(i, "strict", True, f"n{i}") for i in range(8)]
    + [_row(8 + i, "partial", True, f"n{8 + i}") for i in range(4)]
    + [
        _row(12, "strict", False, "n12", leaked=True),  # an evaluation question's entity: no arm trains on it
        _row(13, "hard_failure", False, "n13", ok=True),  # the Quizzer ran, certification failed it
        _row(14, "hard_failure", False, "n14", ok=False),  # the Quizzer itself failed
        _row(15, "hard_failure", False, "n0", ok=True),
    ]
)  # shares n0 … with a held-out item below
CURRICULUM = [{"id": f"c{i}", "split": "train", "entities": [f"node:n{i}"]} for i in range(1, 12)] + [
    {"id": "c0", "split": "test", "entities": ["node:n0"]}
]


def test_selections_and_matched_budget() -> None:
    abl = ablations_from(
        [
            {"name": "strict-only", "data": "strict", "budget": "matched"},
            {"name": "strict+partial", "data": "strict_partial", "budget": "matched"},
            {"name": "uncertified", "data": "uncertified"},
        ]
    )
    chosen = select_rows(abl, CERTIFIED, CURRICULUM, seed=3)
    ids = {k: sorted(r["id"] for r in v) for k, v in chosen.items()}
    assert ids["strict-only"] == [f"c{i}" for i in range(1, 8)]  # strict, off the held-out entities (c0 is test)
    assert len(ids["strict+partial"]) == 7 and set(ids["strict+partial"]) <= {f"c{i}" for i in range(1, 12)}
    # certification removed, generation controls kept: every candidate that ran, except those touching
    # held-out entities (c0 itself and c15, which starts at the test item's node) and the leaked c12
    assert set(ids["uncertified"]) == {f"c{i}" for i in range(1, 12)} | {"c13"}
    assert select_rows(abl, CERTIFIED, CURRICULUM, seed=3) == chosen  # seeded


def test_held_out_questions_never_train_and_node_keys_decide_the_overlap() -> None:
    abl = ablations_from([{"name": "uncertified", "data": "uncertified"}])
    held = {**_row(20, "strict", False, "n20"), "meta_json": json.dumps({"pool": {"source": "held_out"}})}
    rows = [*CERTIFIED, held]
    plain = {r["id"] for r in select_rows(abl, rows, CURRICULUM)["uncertified"]}
    assert "c20" not in plain and plain == {f"c{i}" for i in range(1, 12)} | {"c13"}
    # keyed by the split's node keys, c5 (which walked to the test item's node) is held out as well,
    # and c15 (whose anchor is that node, but a hub there) trains
    keys = {r["id"]: [f"node:{json.loads(r['start_node_json'])['id']}"] for r in rows}
    keys["c5"] += ["node:n0"]
    keys["c15"] = []
    keyed = {r["id"] for r in select_rows(abl, rows, CURRICULUM, keys=keys)["uncertified"]}
    assert keyed == plain - {"c5"} | {"c15"}


def test_the_judged_selection_needs_the_judges_verdicts() -> None:
    judged = ablations_from([{"name": "judged", "data": "judged", "stage": "sft"}, {"name": "c", "data": "strict"}])
    with pytest.raises(ValueError, match="certify.judge: on"):
        select_rows(judged, CERTIFIED, CURRICULUM)
    verdicts = {1: "accept", 2: "reject", 3: "uncertain", 9: "accept", 13: "accept"}
    rows = [{**r, "verdict": verdicts.get(int(r["id"][1:]), r["verdict"])} for r in CERTIFIED]
    chosen = select_rows(judged, rows, CURRICULUM)
    assert sorted(r["id"] for r in chosen["judged"]) == ["c1", "c9"]  # c13 was accepted but failed certification
    assert len(chosen["c"]) == 7  # the other arms ignore the verdicts


def test_every_certified_sft_arm_is_paired_with_the_uncertified_one() -> None:
    summary = [{"name": "raw", "data": "uncertified", "stage": "sft", "seed": s} for s in (0, 1)] + [
        {"name": "strict", "data": "strict", "stage": "sft", "seed": 0},
        {"name": "judged", "data": "judged", "stage": "sft", "seed": 0},
        {"name": "grpo-strict", "data": "strict", "stage": "grpo", "seed": 0},
    ]
    assert ablation_pairs(summary) == [("ablation: judged", "ablation: raw"), ("ablation: strict", "ablation: raw")]
    assert ablation_pairs(summary[2:]) == []  # no uncertified arm: nothing to pair with


def test_config_errors_and_answer_only_reward() -> None:
    with pytest.raises(ValueError, match="unknown data"):
        Ablation("x", data="everything")
    with pytest.raises(ValueError, match="duplicate"):
        ablations_from([{"name": "a"}, {"name": "a"}])
    with pytest.raises(ValueError, match="unknown ablation options"):
        ablations_from([{"name": "a", "steps": 3}])
    with pytest.raises(ValueError, match="unknown stage"):
        Ablation("x", stage="rl")
    with pytest.raises(ValueError, match="seeds must be"):
        Ablation("x", seeds=[-1])
    with pytest.raises(ValueError, match="seeds must be"):
        Ablation("x", seeds=[1, 1])
    assert Ablation("x", seeds=[2, 0]).seeds == (2, 0)
    gold = ["MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN a.name"]
    kwargs = {"answer": ["Ann"], "evidence_queries": [gold], "pred_evidence": [gold]}
    from components.rubric.rewards import graphcert_reward

    wrong = ["<answer>Bob</answer>"]
    assert graphcert_reward(wrong, **kwargs) == [pytest.approx(0.1)]  # a = 0, e = 1 → 0.1
    assert answer_only_reward(wrong, **kwargs) == [0.0]  # the evidence term is gone
    assert answer_only_reward(["<answer>Ann</answer>"], **kwargs) == [1.0]


def test_an_sft_arm_trains_on_claimed_answers_and_failed_programs(tmp_path) -> None:
    """The certification ablation's data arm on a noisy pool of the real academic graph: SFT from
    the tiny base model on every candidate that ran, for the preset's optimizer steps; a swapped
    answer is trained as claimed, and a program that fails when replayed keeps its error
    observation, then the claimed answer."""
    from components.certify.dataset import CertifyConfig, run_certification
    from components.graph.load import load_graph
    from components.graph.sources import demo
    from components.quizzer.noisy import pool_label
    from components.quizzer.run import QuizConfig, run_quiz
    from components.training.ablations import sft_ablation
    from components.training.checkpoint import TrainConfig

    db = tmp_path / "db"
    load_graph(demo.generate("academic", seed=0, scale=300), db)
    run = run_quiz(str(db), QuizConfig(template_n=40, llm_n=0, noise={"hard": 0.5, "seed": 1}))
    rows = run_certification(run.candidates, str(db), CertifyConfig(fault_sample=0)).rows
    arm = Ablation("uncertified", data="uncertified", stage="sft")
    (chosen,) = select_rows([arm], rows, []).values()
    assert {r["status"] for r in chosen} == {"strict", "hard_failure"}
    config = TrainConfig(preset="cpu-tiny", max_steps=2, threads=1)
    result = sft_ablation(arm, chosen, str(db), config, tmp_path / "arm", data_fingerprint="f", domain="academic")
    assert len(result.losses) == 2 and result.method == "sft-ablation"
    assert result.teacher["answers"] == "claimed" and result.teacher["rows"] == config.resolved()["max_examples"]
    assert result.examples == result.teacher["trajectories"] == 16 - len(result.dropped) > 0
    log = json.loads((tmp_path / "arm" / "training_log.json").read_text())
    assert log["method"] == "sft-ablation" and (tmp_path / "arm" / "config.json").is_file()
    # what the trajectories say: the claimed answer, never checked against what the program printed
    from transformers import AutoTokenizer

    from components.tools.episodes import python_cypher_envs
    from components.training.teacher import printed_answer, teacher_records, teacher_steps

    by_kind = {pool_label(c)[1]: r for c, r in zip(run.candidates, rows, strict=True)}
    broken = "r1 = cypher('MATCH (x:`NoSuchLabel`) RETURN count(x) AS n')\nmark_evidence(r1)\nprint(r1.rows[0][0])\n"
    picked = [by_kind["swapped_answer"], {**by_kind["template"], "id": "broken", "final_program": broken}]
    tokenizer = AutoTokenizer.from_pretrained(result.base_model)
    with python_cypher_envs(str(db), max_rounds=2) as make_env:
        strict_records, strict_dropped = teacher_records(picked, teacher_steps, make_env, tokenizer)
        records, dropped = teacher_records(picked, teacher_steps, make_env, tokenizer, failed_calls=True)
    assert not dropped and len(strict_dropped) == 1  # the failed program: kept only where failures are
    swapped, failed = records
    text = tokenizer.decode(swapped.completion_ids)
    assert text.rstrip().endswith(f"<answer>{picked[0]['answer']}</answer>")
    assert picked[0]["answer"] not in printed_answer(swapped)  # not what the program printed
    assert failed.stats.valid_calls == 0 and "NoSuchLabel" in json.dumps(failed.trace)
    assert tokenizer.decode(failed.completion_ids).rstrip().endswith(f"<answer>{picked[1]['answer']}</answer>")


def test_the_certification_benchmark_domain_names_every_arm() -> None:
    """``benchmarks/certification.yaml`` loads: a noisy pool, the judge on, every arm SFT from the
    base model with an evaluation row, seeds 0–2 for the uncertified and the strict arm, and the
    size control (the raw pool cut to the judged arm's size)."""
    from pathlib import Path

    from orchestration.domains import load_domain_file

    cfg = load_domain_file(Path(__file__).resolve().parents[3] / "benchmarks" / "certification.yaml")
    assert cfg.quiz.noise_config().active and cfg.certify.judge == "on"
    assert {a.stage for a in cfg.ablations} == {"sft"} and "ablations" not in cfg.train.mechanics_only
    assert {f"ablation: {a.name}" for a in cfg.ablations} <= set(cfg.evaluate.systems)
    seeds = {a.name: a.seeds for a in cfg.ablations}
    assert seeds["sft-uncertified"] == seeds["sft-strict"] == (0, 1, 2)
    assert {"strict_partial", "judged"} <= {a.data for a in cfg.ablations}
    # the size control: the raw pool cut to the judged arm's size
    assert {a.data for a in cfg.ablations if a.budget == "matched"} == {"uncertified", "judged"}


def test_arms_train_seed_by_seed_and_are_trained_once(tmp_path) -> None:
    """A run stopped part-way keeps one checkpoint of every arm before any arm's extra seeds, and a
    later run links the cached checkpoint instead of training again; a training that fails leaves
    no cached arm behind."""
    from types import SimpleNamespace

    raw = Ablation("raw", data="uncertified", stage="sft", seeds=(0, 1, 2))
    strict = Ablation("strict", data="strict", stage="sft", seeds=(0, 1))
    judged = Ablation("judged", data="judged", stage="sft")
    order = [(a.name, s) for a, s in arm_order([raw, strict, judged], default_seed=7)]
    assert order == [("raw", 0), ("strict", 0), ("judged", 7), ("raw", 1), ("strict", 1), ("raw", 2)]

    calls = []

    def train(folder):
        calls.append(folder)
        (folder / "weights").mkdir(parents=True)
        (folder / "weights" / "model.bin").write_bytes(b"w" * 10)
        return SimpleNamespace(examples=4, curves=[{"step": 1, "loss": 0.5}], losses=[0.5], wall_s=1.5)

    cache = tmp_path / "cache" / "key"
    first = cached_arm(cache, tmp_path / "run1" / "raw" / "seed-0", train)
    second = cached_arm(cache, tmp_path / "run2" / "raw" / "seed-0", train)
    assert len(calls) == 1 and first["reused"] is False and second["reused"] is True
    assert {k: second[k] for k in ("examples", "last_loss", "last_reward", "wall_s")} == {
        "examples": 4,
        "last_loss": 0.5,
        "last_reward": None,
        "wall_s": 1.5,
    }
    linked = tmp_path / "run2" / "raw" / "seed-0" / "weights" / "model.bin"
    assert linked.read_bytes() == b"w" * 10 and not (linked.parent.parent / "arm.json").exists()

    def crash(folder):
        folder.mkdir(parents=True)
        raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError, match="out of memory"):
        cached_arm(tmp_path / "cache" / "other", tmp_path / "run3" / "x", crash)
    assert not (tmp_path / "cache" / "other").exists()  # the next run trains it again
