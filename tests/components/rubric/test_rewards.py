"""Answer metrics and the three rewards: GraphCert's worked examples, bounds, TRL's calling style."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.rubric.metrics import answer_metrics, exact_match, raw_exact_match, rouge_l, token_f1
from components.rubric.rewards import (
    REWARDS,
    extract_answer,
    get_reward,
    grain_reward,
    graph_structure_scores,
    graphcert_reward,
    graphdancer_reward,
    predictions,
)

Q = "MATCH (a:Author {name: $n})-[:WROTE]->(p:Paper) RETURN count(p) AS n"
OTHER = "MATCH (v:Venue) RETURN DISTINCT v.name ORDER BY v.name"


def _cert(pred: str, gold: str, gold_ev, pred_ev, answer_type=None) -> float:
    return graphcert_reward(
        [f"<think>…</think><answer>{pred}</answer>"],
        answer=[gold],
        evidence_queries=[gold_ev],
        pred_evidence=[pred_ev],
        answer_type=[answer_type],
    )[0]


def test_spec_worked_examples_to_the_third_decimal() -> None:
    """The GraphCert source's table: (a, e) → R."""
    assert _cert("nope", "x y", [Q], [Q]) == pytest.approx(0.100, abs=5e-4)  # a = 0, e = 1
    assert _cert("x z", "x y", [Q], [Q]) == pytest.approx(0.550, abs=5e-4)  # a = 0.5, e = 1
    assert _cert("x y", "x y", [Q], []) == pytest.approx(1.000, abs=5e-4)  # a = 1, e = 0
    assert _cert("x y", "x y", [Q], [Q]) == pytest.approx(1.000, abs=5e-4)  # a = 1, e = 1
    assert _cert("x z", "x y", [Q], []) == pytest.approx(0.500, abs=5e-4)  # a = 0.5, e = 0 (no marked evidence)


def test_graphcert_edge_cases() -> None:
    assert graphcert_reward(["no answer tag"], answer=["x"], evidence_queries=[[Q]], pred_evidence=[[Q]]) == [0.0]
    assert graphcert_reward(["<answer>x</answer>"], answer=[None]) == [None]  # no gold: not applicable
    # a wrong answer with partial evidence gets part of the 0.1
    part = _cert("nope", "x y", [Q, OTHER], [Q])
    assert 0.0 < part < 0.1
    # gold evidence given as a certified row's evidence_json
    ev_json = json.dumps([{"id": "c:q1", "query": Q, "params": {}}])
    r = graphcert_reward(["<answer>no</answer>"], answer=["x"], evidence_json=[ev_json], pred_evidence=[[Q]])
    assert r == [pytest.approx(0.1)]
    # set answers compare as sets
    assert _cert("Bob; Ann", "Ann, Bob", [Q], [], answer_type="set") == 1.0


@settings(max_examples=80, deadline=None)
@given(
    st.text(max_size=30),
    st.text(min_size=1, max_size=30),
    st.lists(st.sampled_from([Q, OTHER, "nonsense"]), max_size=3),
    st.lists(st.sampled_from([Q, OTHER, "nonsense"]), max_size=3),
)
def test_graphcert_bounds(pred: str, gold: str, gold_ev, pred_ev) -> None:
    text = f"<answer>{pred}</answer>"
    r = graphcert_reward([text], answer=[gold], evidence_queries=[gold_ev], pred_evidence=[pred_ev])[0]
    assert 0.0 <= r <= 1.0
    a = token_f1(extract_answer(text), gold)
    if a == 1.0:
        assert r == 1.0
    if a == 0.0:
        assert r <= 0.1 + 1e-12


def test_graphdancer_truth_table() -> None:
    good, bare = "<think>ok</think><answer>Paris</answer>", "<answer>Paris</answer>"
    wrong, empty = "<think>ok</think><answer>Rome</answer>", "<think>ok</think><answer></answer>"
    r = graphdancer_reward([good, bare, wrong, empty, "babble"], answer=["Paris"] * 5)
    assert r == [1.0, pytest.approx(0.8), pytest.approx(0.1), 0.0, 0.0]
    # VF from the episode overrides parsing; a conversational completion is read turn by turn
    assert graphdancer_reward([bare], answer=["Paris"], valid_format=[True]) == [1.0]
    convo = [
        {"role": "assistant", "content": "<think>look</think><graph>RetrieveNode[Paris]</graph>"},
        {"role": "user", "content": "<information>…</information>"},
        {"role": "assistant", "content": "<think>found</think><answer>Paris</answer>"},
    ]
    assert graphdancer_reward([convo], answer=["paris"]) == [1.0]
    broken = convo[:2] + [{"role": "assistant", "content": "<graph>oops"}, convo[2]]
    assert graphdancer_reward([broken], answer=["paris"]) == [pytest.approx(0.8)]


GOLD_IR = {
    "problem_type": "shortest_path",
    "graph": {"data": {"A": {"B": 2, "C": 5}, "B": {"C": 3}}, "directed": False, "weighted": True},
    "parameters": {"source": "A", "target": "C"},
}


def _with(data: dict) -> dict:
    return {**GOLD_IR, "graph": {**GOLD_IR["graph"], "data": data}}


def test_grain_structure_scores() -> None:
    assert graph_structure_scores(GOLD_IR, GOLD_IR) == {"node_f1": 1.0, "edge_f1": 1.0, "exact": 1.0}
    # an undirected edge written the other way round is the same edge
    flipped = _with({"B": {"A": 2}, "C": {"A": 5, "B": 3}})
    assert graph_structure_scores(flipped, GOLD_IR)["exact"] == 1.0
    # a wrong weight: nodes right, one edge wrong, not exact
    s = graph_structure_scores(_with({"A": {"B": 2, "C": 4}, "B": {"C": 3}}), GOLD_IR)
    assert s["node_f1"] == 1.0 and s["edge_f1"] == pytest.approx(2 / 3) and s["exact"] == 0.0
    # renamed nodes (an isomorphic graph under other names) recover no structure
    s = graph_structure_scores(
        _with({"X": {"Y": 2, "Z": 5}, "Y": {"Z": 3}}) | {"parameters": {"source": "X", "target": "Z"}}, GOLD_IR
    )
    assert s == {"node_f1": 0.0, "edge_f1": 0.0, "exact": 0.0}
    assert graph_structure_scores("<graph>{bad json</graph>", GOLD_IR) == {"node_f1": 0.0, "edge_f1": 0.0, "exact": 0.0}
    with pytest.raises(ValueError, match="gold"):
        graph_structure_scores(GOLD_IR, {"nonsense": True})


def test_grain_reward_combination() -> None:
    call = "<graph>" + json.dumps(GOLD_IR) + "</graph>"
    half = "<graph>" + json.dumps(_with({"A": {"B": 2, "C": 4}, "B": {"C": 3}})) + "</graph>"
    r = grain_reward(
        [call + "Answer: 5", half + "<answer>5</answer>", call + "<answer>7</answer>", "<answer>5</answer>"],
        answer=["5"] * 4,
        gold_ir=[GOLD_IR] * 4,
    )
    structure_half = (1.0 + 2 / 3 + 0.0) / 3
    assert r == [
        pytest.approx(1.0),
        pytest.approx(0.5 + 0.4 * structure_half + 0.1),
        pytest.approx(0.5),
        pytest.approx(0.5),
    ]
    assert grain_reward([call], answer=["5"], gold_ir=[None]) == [None]
    assert all(0.0 <= x <= 1.0 for x in r)


def test_registry_and_trl_calling_style() -> None:
    assert set(REWARDS) == {"graphcert", "graphdancer", "grain"}
    assert get_reward("graphcert") is graphcert_reward
    with pytest.raises(KeyError, match="registered"):
        get_reward("nope")
    # TRL passes prompts, completion ids and every dataset column as keyword arguments
    out = get_reward("graphdancer")(
        prompts=["q"] * 2,
        completions=["<answer>a</answer>", "x"],
        answer=["a", "a"],
        completion_ids=[[1], [2]],
        trainer_state=None,
        question=["q", "q"],
    )
    assert isinstance(out, list) and len(out) == 2 and all(isinstance(x, float) for x in out)


def test_answer_metrics() -> None:
    assert exact_match("The Eiffel Tower.", "eiffel tower") == 1.0
    assert raw_exact_match("The Eiffel Tower.", "eiffel tower") == 0.0 and raw_exact_match("x", "x") == 1.0
    assert token_f1("graph neural network", "graph network") == pytest.approx(0.8)
    assert exact_match(["y", "x"], "x; y", "set") == 1.0 and exact_match("x; y; z", "x; y", "set") == 0.0
    assert token_f1("x; y; z", "x; y", "set") == pytest.approx(0.8)
    assert rouge_l("the quick brown fox", "the quick fox") == pytest.approx(2 * 1 * 0.75 / 1.75)
    m = answer_metrics(None, "x")
    assert m == {"f1": 0.0, "em": 0.0, "raw_em": 0.0, "rouge_l": 0.0}
    assert answer_metrics(True, "yes")["em"] == 1.0  # booleans read as yes / no


def test_rewards_read_the_environments_parsed_answer() -> None:
    """Under a rollout the reward scores the answer the environment parsed (what evaluation
    scores), not an ``<answer>`` tag or ``Answer:`` line that appears anywhere in the completion's
    text — e.g. inside an observation the environment inserted."""
    echoed = "print(x)\n<information>\nAnswer: 12\n</information>\n"  # the model never answered
    answered = "<answer>12</answer>"
    gold = ["12", "12"]
    # without the rollout's column the text is read (single-turn completions)
    assert graphcert_reward([echoed, answered], answer=gold) == [1.0, 1.0]
    parsed = {"parsed_answer": [None, "12.0"], "answer_type": ["number", "number"]}
    assert graphcert_reward([echoed, answered], answer=gold, **parsed) == [0.0, 1.0]
    assert graphdancer_reward([echoed, answered], answer=gold, valid_format=[False, True], **parsed) == [0.0, 1.0]
    # the parsed answer wins over the text's even when both exist
    assert graphcert_reward([answered], answer=["12"], parsed_answer=["13"]) == [0.0]
    assert predictions(["a", "b"], {"parsed_answer": [" 7 ", None]}) == ["7", None]
    with pytest.raises(ValueError, match="parsed answers"):
        predictions(["a", "b"], {"parsed_answer": ["7"]})
