"""Which questions an RL stage trains on (the probe's sometimes-solved choice) and the rewards of
played episodes as the trainer computes them — on the real tiny model, the real sandbox and the
real graphcert reward."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.training.selection import answers_correct, play, probe, score, sometimes_solved, summarize


def test_sometimes_solved_prefers_varying_groups_closest_to_half() -> None:
    rows = [{"id": i} for i in range(6)]
    groups = [[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.1, 0.1], [0.2, 0.0], [1.0, 0.6]]
    chosen, report = sometimes_solved(rows, groups, want=4, seed=3)
    # the varying groups first, by |mean − 0.5|: #2 (0.5), then #5 (0.8 → 0.3) and #4 (0.1 → 0.4)
    assert [r["id"] for r in chosen[:3]] == [2, 5, 4]
    assert chosen[3]["id"] in (0, 1, 3)  # filled up from the others (a seeded order)
    assert report == {
        "probed": 6,
        "samples": 2,
        "never": 1,
        "sometimes": 3,
        "always": 1,
        "selected": 4,
        "selected_sometimes": 3,
        "probe_reward": pytest.approx(sum(map(sum, groups)) / 12),
    }
    assert sometimes_solved(rows, groups, want=4, seed=3) == (chosen, report)  # seeded
    assert len(sometimes_solved(rows, groups, want=2)[0]) == 2
    with pytest.raises(ValueError, match="probe groups"):
        sometimes_solved(rows, groups[:2], want=2)


def test_probe_scores_each_episode_as_the_trainer_does(tmp_path: Path) -> None:
    """A probe plays every row ``samples`` times; :func:`score` hands the reward the dataset's
    columns and the rollout's (the rollout's win, as in TRL), and the graphcert reward of a real
    played episode is what the reward function gives its completion directly."""
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.llm.models import tiny_random_model
    from components.llm.transformers_backend import TransformersBackend
    from components.rollout import RolloutConfig
    from components.rollout.runner import CODE_STOPS
    from components.rubric.rewards import graphcert_reward
    from components.tools.episodes import PythonCypherEnvironment
    from tests.components.tools.test_graph_cot import library_graph

    db = tmp_path / "db"
    load_graph(library_graph(), db)
    model = tiny_random_model(tmp_path / "tiny", seed=0)
    rows = [
        {"prompt": "Who wrote p2?", "answer": "Ann Lee, Bob Stone", "level": "curriculum-level"},
        {"prompt": "How many papers are there?", "answer": "3", "level": "curriculum-level"},
    ]
    seen: list[dict] = []

    def spy(completions, **kwargs):
        seen.append(kwargs)
        return [len(c) / 1000 for c in completions]  # a reward that differs between episodes

    # a fresh engine per call, as a new process has: within one engine, prompts found in its cache
    # are computed in other matmul shapes, and a random model's flat distributions can then flip a
    # draw (components/llm/engine.py, "Reproducibility")
    fresh = lambda: TransformersBackend(model, threads=1)  # noqa: E731
    with LadybugBackend(db) as graph:
        schema = graph.schema()
        qp = ReadOnlyQueryPath(graph, schema=schema)
        make_env = lambda: PythonCypherEnvironment(qp, schema, max_rounds=1)  # noqa: E731
        rollout = RolloutConfig(max_turns=2, max_new_tokens=16, stops=CODE_STOPS, seed=5)
        groups = probe(fresh(), rows, make_env, rollout, spy, samples=3, by="reward")
        solved = probe(fresh(), rows, make_env, rollout, spy, samples=3)  # by answer: the default
        records = play(fresh(), rows, make_env, rollout, 3)
        with pytest.raises(ValueError, match="probe by"):
            probe(fresh(), rows, make_env, rollout, spy, samples=3, by="length")
    assert [len(g) for g in groups] == [3, 3]
    # the same seed plays the same episodes: the probe's rewards are the records' own
    assert [x for g in groups for x in g] == [len(r.completion_text) / 1000 for r in records]
    # by answer: each episode's typed EM against the row's gold answer (a random model: never right)
    assert solved == [answers_correct(records[:3], rows[:1] * 3), answers_correct(records[3:], rows[1:] * 3)]
    assert solved == [[0.0] * 3, [0.0] * 3]
    cols = seen[0]
    assert cols["answer"] == ["Ann Lee, Bob Stone"] * 3 + ["3"] * 3
    assert cols["level"] == [r.stats.level for r in records] != ["curriculum-level"] * 6  # the rollout's level
    assert len(cols["pred_evidence"]) == 6 and "prompt" not in cols
    direct = graphcert_reward(
        [r.completion_text for r in records], answer=cols["answer"], pred_evidence=cols["pred_evidence"]
    )
    assert score(graphcert_reward, records, [row for row in rows for _ in range(3)]) == direct
    s = summarize(records, [1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    assert s["reward"] == 0.5 and s["episodes"] == 6 and s["reward_se"] == pytest.approx((0.3 / 6) ** 0.5)
    assert 0.0 <= s["tool_call_rate"] <= 1.0 and 0.0 <= s["valid_format"] <= 1.0


def _record(answer: str | None, answered: bool = True):
    """A played episode's record as the runner builds it (only its statistics matter here)."""
    from components.rollout.runner import RolloutRecord, TrajectoryStats

    stats = TrajectoryStats(
        valid_format=answered,
        valid_calls=1,
        invalid_calls=0,
        halted=False,
        rounds=1,
        s_rounds=1,
        e_rounds=0,
        level="L1",
        evidence_hit=None,
        answer=answer,
        answered=answered,
        model_tokens=10,
        env_tokens=5,
        truncated=not answered,
    )
    return RolloutRecord(row={}, prompt_ids=[1], stats=stats, completion_text=f"<answer>{answer}</answer>")


def test_answers_correct_is_the_evaluations_typed_match() -> None:
    from components.training.selection import answers_correct, rollout_columns

    records = [_record("12.0"), _record("true"), _record("3"), _record("Bob; Ann"), _record(None, answered=False)]
    rows = [
        {"answer": "12", "answer_type": "number"},
        {"answer": "yes", "answer_type": "boolean"},
        {"answer": "-3", "answer_type": "number"},  # a sign is never dropped
        {"answer": ["Ann", "Bob"], "answer_type": "set"},
        {"answer": "x"},
    ]
    assert answers_correct(records, rows) == [1.0, 1.0, 0.0, 1.0, 0.0]
    assert answers_correct([_record("5")], [{"prompt": "no gold"}]) == [0.0]
    with pytest.raises(ValueError, match="records but"):
        answers_correct(records, rows[:2])
    # the rollout hands the rewards the environment's parsed answer (None: never answered)
    assert rollout_columns(records)["parsed_answer"] == ["12.0", "true", "3", "Bob; Ann", None]
    s = summarize(records, [0.0] * 5, rows)
    assert s["em"] == pytest.approx(0.6) and s["em_se"] > 0
    # non-boolean EM leaves the yes/no row out: 2 of the 4 others are right
    assert s["em_nonbool"] == pytest.approx(0.5)


def test_two_validation_points_pair_question_by_question() -> None:
    """The difference of two points of one curve is paired by episode position; with two samples a
    question is one cluster of the bootstrap; ``em_nonbool`` leaves yes/no rows out."""
    from components.training.selection import paired_points

    types = ["boolean", "boolean", "number", "number", "set", "set"]  # 3 questions x 2 samples
    start = {"correct": [1, 1, 0, 0, 0, 1], "answer_types": types, "samples": 2}
    later = {"correct": [0, 0, 1, 1, 1, 1], "answer_types": types, "samples": 2}
    d = paired_points(later, start)
    assert d["n"] == 3 and d["value"] == pytest.approx((-1 + 1 + 0.5) / 3)
    nb = paired_points(later, start, "em_nonbool")
    assert nb["n"] == 2 and nb["value"] == pytest.approx(0.75) and nb["ci"][0] <= 0.75 <= nb["ci"][1]
    assert paired_points({}, {})["value"] is None  # a log without per-episode results
    with pytest.raises(ValueError, match="different numbers"):
        paired_points(later, {"correct": [1], "answer_types": ["number"], "samples": 2})


def test_the_validation_point_carries_the_rewards_answer_and_evidence_terms() -> None:
    """GraphCert's terms, each on its own: the answer's token F1 of the parsed answer and
    S_evidence of the marked queries against the row's gold evidence (also where the answer is
    right); an episode that never answered scores 0 on both; a row without gold is left out."""
    q = "MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN count(p)"
    right, wrong, silent = _record("12"), _record("13"), _record(None, answered=False)
    right.evidence, wrong.evidence, silent.evidence = [q], [], [q]
    rows = [{"answer": "12", "answer_type": "number", "evidence_queries": [q]}] * 3 + [{"prompt": "no gold"}]
    terms = summarize([right, wrong, silent, _record("1")], [1.0, 0.0, 0.0, 0.0], rows)
    assert terms["answer_f1"] == pytest.approx(1 / 3) and terms["evidence"] == pytest.approx(1 / 3)


def test_probing_by_answer_ignores_reward_differences_among_wrong_answers() -> None:
    """The learning table's failure: groups whose answers are all wrong still have rewards that
    differ by the evidence term (0.01–0.03), so probing by reward called them "sometimes solved";
    probing by answer correctness calls them never solved and prefers the really mixed group."""
    rows = [{"id": i} for i in range(3)]
    rewards = [[0.02, 0.03, 0.0, 0.01], [1.0, 0.02, 1.0, 0.0], [0.01, 0.03, 0.02, 0.0]]
    correct = [[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    _, by_reward = sometimes_solved(rows, rewards, want=1)
    chosen, by_answer = sometimes_solved(rows, correct, want=1)
    assert by_reward["sometimes"] == 3 and by_reward["never"] == 0
    assert by_answer["sometimes"] == 1 and by_answer["never"] == 2 and chosen == [{"id": 1}]
    assert by_answer["probe_reward"] == pytest.approx(2 / 12)  # the solve rate
