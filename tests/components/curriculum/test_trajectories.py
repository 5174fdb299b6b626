"""Graph-CoT teacher trajectories on real certified template items of the generated academic
graph: every kept trajectory replays in the real Graph-CoT environment with the same
observations, its answer agrees with the certified one without being copied from it (a wrong
certified answer is excluded, not echoed), exclusions carry their reasons, and the measured
level comes from the rounds' returned node ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.certify.dataset import features_json
from components.curriculum.levels import estimate_level
from components.curriculum.sampler import level_of
from components.curriculum.trajectories import (
    EXCLUSION_REASONS,
    Exclusion,
    Trajectory,
    coverage,
    level_confusion,
    teacher_trajectories,
    teacher_trajectory,
)
from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.sources.demo import generate
from components.quizzer.template import TemplateQuizzer
from components.tools.cot_env import GraphCoTEnvironment
from components.tools.graph_cot import GraphCoT
from components.tools.retriever import NodeIndex, shared_embedder


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory):
    db = Path(tmp_path_factory.mktemp("traj")) / "db"
    load_graph(generate("academic", seed=0, scale=300), db)
    backend = LadybugBackend(db)
    schema = backend.schema()
    qp = ReadOnlyQueryPath(backend, schema=schema)
    items = [c.to_record() for c in TemplateQuizzer(qp, schema, seed=0).generate(80) if c.ok]
    api = GraphCoT(backend, index=NodeIndex.open(backend, shared_embedder(threads=1), progress=False))
    trajectories, excluded = teacher_trajectories(items, api)
    yield {"api": api, "schema": schema, "items": items, "trajectories": trajectories, "excluded": excluded}
    backend.close()


def test_most_families_are_covered_and_every_item_is_accounted_for(env) -> None:
    trajectories, excluded = env["trajectories"], env["excluded"]
    assert len(trajectories) + len(excluded) == len(env["items"])
    assert len(trajectories) >= len(env["items"]) // 2
    assert {e.reason for e in excluded} <= set(EXCLUSION_REASONS)
    assert not [e for e in excluded if e.reason == "answer_mismatch"]  # the translation is faithful
    table = coverage(trajectories, excluded)
    assert sum(row["items"] for row in table.values()) == len(env["items"])
    for fam in ("one_hop_set", "optional_count", "comparison_rank"):
        if fam in table:
            assert table[fam]["coverage"] == 1.0
    assert all(e.reason == "not_expressible" for e in excluded if e.family.startswith("shortest"))


def test_trajectories_replay_in_the_graph_cot_environment(env) -> None:
    by_id = {i["id"]: i for i in env["items"]}
    for traj in env["trajectories"]:
        assert 1 <= len(traj.rounds) <= 10
        assert traj.rounds[0].call.function == "RetrieveNode"
        episode = GraphCoTEnvironment(env["api"])
        episode.reset(question=traj.question)
        steps = traj.steps()
        for step, rnd in zip(steps, traj.rounds, strict=False):
            reply, done = episode.step(step)
            assert not done and rnd.call.observation in reply
        reply, done = episode.step(steps[-1])
        assert done and episode.trace.answer == traj.answer_text
        assert episode.trace.valid_format and episode.trace.invalid_calls == 0
        turns = traj.transcript()
        assert [t["role"] for t in turns[:2]] == ["assistant", "environment"] and turns[-1]["content"] == steps[-1]
        assert traj.question == by_id[traj.item_id]["question"]


def test_the_answer_comes_from_the_observations_not_the_certified_item(env) -> None:
    api = env["api"]
    sets = [t for t in env["trajectories"] if t.answer_type == "set"]
    assert sets
    for traj in sets[:5]:
        seen = " ".join(r.call.observation for r in traj.rounds)
        assert all(str(name) in seen for name in traj.answer)
    item = next(i for i in env["items"] if i["id"] == env["trajectories"][0].item_id)
    value = json.loads(item["answer_value_json"])
    wrong_value = {"number": 987654321, "boolean": not value, "entity": "nobody at all", "set": ["nobody at all"]}
    wrong = {**item, "answer_value_json": json.dumps(wrong_value[item["answer_type"]])}
    got = teacher_trajectory(wrong, api)
    assert isinstance(got, Exclusion) and got.reason == "answer_mismatch"


def test_exclusions_are_results_never_crashes(env) -> None:
    api = env["api"]
    long = next(t for t in env["trajectories"] if len(t.rounds) >= 3)
    item = next(i for i in env["items"] if i["id"] == long.item_id)
    capped = teacher_trajectory(item, api, max_rounds=2)
    assert isinstance(capped, Exclusion) and capped.reason == "too_many_rounds"
    broken = {**item, "evidence_json": json.dumps([{"query": "MATCH (n) RETURN n", "params": {}}])}
    assert isinstance(teacher_trajectory(broken, api), Exclusion)
    assert teacher_trajectory({"id": "x"}, api).reason == "not_expressible"
    assert isinstance(teacher_trajectory({**item, "meta_json": "{not json"}, api), Exclusion)
    assert isinstance(teacher_trajectory({**item, "evidence_json": "[3]"}, api), Exclusion)
    garbage = {
        **item,
        "evidence_json": json.dumps(
            [
                {
                    "query": "MATCH (s:`Nope` {`id`: $start})-[:`X`]->(x:`Y`) RETURN DISTINCT x.`name` AS answer",
                    "params": {"start": "zzz"},
                }
            ]
        ),
    }
    assert isinstance(teacher_trajectory(garbage, api), Exclusion)


def test_measured_levels_come_from_the_returned_ids(env) -> None:
    trajectories: list[Trajectory] = env["trajectories"]
    for traj in trajectories:
        assert traj.to_dict()["round_kinds"][0] == "S"  # RetrieveNode with top_k = 1 returns one node
    # a set of several neighbours: RetrieveNode (S), one NeighborCheck listing them (E), then the
    # names (rounds that return no node): one E-round → medium
    one_hop = [t for t in trajectories if t.family == "one_hop_set" and len(t.answer) >= 2]
    assert one_hop
    for traj in one_hop:
        assert traj.to_dict()["round_kinds"][:2] == ["S", "E"] and traj.level == "medium"
    # two E-rounds (a frontier of several nodes expanded again) → hard; no E-round and one round → easy
    assert level_of([["a"], ["b", "c"], ["d", "e"]]) == "hard" and level_of([["a"]]) == "easy"
    wide = [t for t in trajectories if [len(set(u)) > 1 for u in t.returned].count(True) >= 2]
    assert all(t.level == "hard" for t in wide)
    estimated = {}
    for item in env["items"]:
        start = json.loads(item["start_node_json"] or "{}")
        features = [features_json(ev["query"], env["schema"]) for ev in json.loads(item["evidence_json"])]
        estimated[item["id"]] = estimate_level(features, env["schema"], start.get("label"))
    table = level_confusion(estimated, trajectories)
    assert sum(sum(row.values()) for row in table.values()) == len(trajectories)
