"""Which questions an RL stage trains on (the probe's sometimes-solved choice) and the rewards of
played episodes as the trainer computes them — on the real tiny model, the real sandbox and the
real graphcert reward."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.training.selection import play, probe, score, sometimes_solved, summarize


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

    backend = TransformersBackend(model, threads=1)
    with LadybugBackend(db) as graph:
        schema = graph.schema()
        qp = ReadOnlyQueryPath(graph, schema=schema)
        make_env = lambda: PythonCypherEnvironment(qp, schema, max_rounds=1)  # noqa: E731
        rollout = RolloutConfig(max_turns=2, max_new_tokens=16, stops=CODE_STOPS, seed=5)
        groups = probe(backend, rows, make_env, rollout, spy, samples=3)
        records = play(backend, rows, make_env, rollout, 3)
    backend.close()
    assert [len(g) for g in groups] == [3, 3]
    # the same seed plays the same episodes: the probe's rewards are the records' own
    assert [x for g in groups for x in g] == [len(r.completion_text) / 1000 for r in records]
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
