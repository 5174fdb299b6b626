"""Ablation configs and their data selections on crafted certified rows (real grounding code)."""

from __future__ import annotations

import json

import pytest

from components.training.ablations import Ablation, ablations_from, answer_only_reward, select_rows


def _row(i: int, status: str, admitted: bool, node: str, ok: bool = True) -> dict:
    return {
        "id": f"c{i}",
        "status": status,
        "admitted": admitted,
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
        _row(12, "strict", False, "n12"),  # not admitted (e.g. leaked)
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
    assert ids["strict-only"] == [f"c{i}" for i in range(1, 8)]  # admitted strict of the train split (c0 is test)
    assert len(ids["strict+partial"]) == 7 and set(ids["strict+partial"]) <= {f"c{i}" for i in range(1, 12)}
    # certification removed, generation controls kept: every candidate that ran, except those touching
    # held-out entities (c0 itself and c15, which starts at the test item's node)
    assert set(ids["uncertified"]) == {f"c{i}" for i in range(1, 14)}
    assert select_rows(abl, CERTIFIED, CURRICULUM, seed=3) == chosen  # seeded


def test_config_errors_and_answer_only_reward() -> None:
    with pytest.raises(ValueError, match="unknown data"):
        Ablation("x", data="everything")
    with pytest.raises(ValueError, match="duplicate"):
        ablations_from([{"name": "a"}, {"name": "a"}])
    with pytest.raises(ValueError, match="unknown ablation options"):
        ablations_from([{"name": "a", "steps": 3}])
    gold = ["MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN a.name"]
    kwargs = {"answer": ["Ann"], "evidence_queries": [gold], "pred_evidence": [gold]}
    from components.rubric.rewards import graphcert_reward

    wrong = ["<answer>Bob</answer>"]
    assert graphcert_reward(wrong, **kwargs) == [pytest.approx(0.1)]  # a = 0, e = 1 → 0.1
    assert answer_only_reward(wrong, **kwargs) == [0.0]  # the evidence term is gone
    assert answer_only_reward(["<answer>Ann</answer>"], **kwargs) == [1.0]
