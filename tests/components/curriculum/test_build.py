"""Levels and splits of a real certified dataset (demo graph, template candidates)."""

from __future__ import annotations

import json

import pytest

from components.certify.dataset import CertifyConfig, run_certification
from components.curriculum import LEVELS, build_curriculum, curriculum_summary, estimate_rounds
from components.cypher.features import features_json
from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.sources.demo import generate
from components.quizzer.template import TemplateQuizzer

_DB: dict[str, str] = {}


@pytest.fixture(scope="module")
def certified(tmp_path_factory: pytest.TempPathFactory):
    db = tmp_path_factory.mktemp("curr") / "db"
    load_graph(generate("academic", seed=0, scale=300), db)
    with LadybugBackend(db) as b:
        schema = b.schema()
        cands = TemplateQuizzer(ReadOnlyQueryPath(b, schema=schema), schema, seed=4).generate(30)
        fp = b.fingerprint()
    for c in cands:
        c.meta["snapshot_fingerprint"] = fp
    _DB["path"] = str(db)
    return run_certification(cands, str(db), CertifyConfig(fault_sample=0)).rows, schema


def test_fanout_estimates_follow_the_traversed_direction(certified) -> None:
    _, schema = certified
    wrote = [features_json("MATCH (a:Author {id: $id})-[:WROTE]->(p:Paper) RETURN p.title", schema)]
    venue = [features_json("MATCH (p:Paper {id: $id})-[:PUBLISHED_IN]->(v:Venue) RETURN v.name", schema)]
    back = [features_json("MATCH (v:Venue {id: $id})<-[:PUBLISHED_IN]-(p:Paper) RETURN p.title", schema)]
    (papers_per_author,) = estimate_rounds(wrote, schema, "Author")
    assert papers_per_author >= 2  # an E-round
    assert estimate_rounds(venue, schema, "Paper") == [1]  # a paper has one venue: an S-round
    (papers_per_venue,) = estimate_rounds(back, schema, "Venue")
    counts = {t.source: t.count for t in schema.types["PUBLISHED_IN"].triples}
    assert papers_per_venue == round(counts["Paper"] / schema.labels["Venue"].count) > 1
    two_hop = [
        features_json("MATCH (a:Author {id: $id})-[:WROTE]->(p:Paper)-[:PUBLISHED_IN]->(v:Venue) RETURN v.name", schema)
    ]
    assert estimate_rounds(two_hop, schema, "Author") == [papers_per_author, 1]
    assert estimate_rounds([{"ok": False}], schema, "Author") == [1]


def test_curriculum_levels_and_splits(certified) -> None:
    rows, schema = certified
    items = build_curriculum(rows, schema, _DB["path"], seed=1)
    assert len(items) == sum(bool(r["admitted"]) for r in rows) > 10
    assert {i["level"] for i in items} <= set(LEVELS) and len({i["level"] for i in items}) >= 2
    assert {i["split"] for i in items} <= {"train", "validation", "test"}
    summary = curriculum_summary(items, total_steps=10)
    assert summary["crossing_entities"] == [] and summary["items"] == len(items)
    assert sum(summary["by_level_split"].values()) == len(items)
    for p in summary["sampler"].values():
        assert sum(p.values()) == pytest.approx(1.0)
    for item in items:
        row = next(r for r in rows if r["id"] == item["id"])
        start = json.loads(row["start_node_json"])
        assert f"node:{start['id']}" in item["entities"]


def test_teacher_trajectories_replay_certified_programs(certified) -> None:
    """Teacher trajectories run each certified program for real in the Python + Cypher
    environment: one valid call, the answer, the marked evidence, environment tokens masked."""
    from components.llm.models import smollm2_tokenizer
    from components.tools.episodes import PythonCypherEnvironment
    from components.training.teacher import certified_teacher_records

    rows, schema = certified
    admitted = [r for r in rows if r["admitted"]][:4]
    broken = dict(admitted[0], id="broken", final_program="raise RuntimeError('no')")
    with LadybugBackend(_DB["path"]) as b:
        qp = ReadOnlyQueryPath(b, schema=schema)
        records, dropped = certified_teacher_records(
            admitted + [broken], lambda: PythonCypherEnvironment(qp, schema), smollm2_tokenizer()
        )
    assert [d["id"] for d in dropped] == ["broken"] and len(records) == len(admitted)
    for rec, row in zip(records, admitted, strict=True):
        s = rec.stats
        assert s.answered and s.valid_format and s.valid_calls == 1 and s.answer == str(row["answer"])
        assert rec.evidence and all(isinstance(q, str) for q in rec.evidence)
        assert [m for m, _ in rec.segments()] == [1, 0, 1]


def test_split_config_shares_change_the_split_and_the_fingerprint_only_when_set(certified) -> None:
    from components.curriculum.build import CURRICULUM_SPLITS, SplitConfig

    rows, schema = certified
    default = build_curriculum(rows, schema, _DB["path"], seed=1)
    more_test = build_curriculum(
        rows, schema, _DB["path"], fractions=SplitConfig(fractions=[0.5, 0.1, 0.4]).fractions, seed=1
    )
    count = lambda items: sum(i["split"] == "test" for i in items)  # noqa: E731
    assert count(more_test) > count(default)
    assert curriculum_summary(more_test)["crossing_entities"] == []
    on = {"trajectories": True}  # the default (test below)
    assert CURRICULUM_SPLITS.params(SplitConfig(seed=3)) == CURRICULUM_SPLITS.params(3) == {"seed": 3, **on}
    assert SplitConfig(fractions=[0.7, 0.1, 0.2]).params() == {"seed": 0, "fractions": [0.7, 0.1, 0.2], **on}
    for bad in ([0.5, 0.5], [0.9, 0.2, -0.1], [0.5, 0.2, 0.2]):
        with pytest.raises(ValueError, match="fractions"):
            SplitConfig(fractions=bad)
    with pytest.raises(ValueError, match="unknown curriculum options"):
        SplitConfig.from_dict({"test_share": 0.2})


def test_measured_levels_replace_estimates_where_a_trajectory_exists(certified) -> None:
    from components.curriculum.build import SplitConfig, measure_levels

    rows, schema = certified
    items = build_curriculum(rows, schema, _DB["path"], seed=0)
    estimated = {i["id"]: i["level"] for i in items}
    report = measure_levels(items, rows, _DB["path"])
    measured = [i for i in items if i["level_source"] == "measured"]
    assert measured and report["trajectories"] == len(measured)
    assert report["trajectories"] + sum(report["excluded"].values()) == len(items)
    for item in items:
        assert item["estimated_level"] == estimated[item["id"]]
        trajectory = json.loads(item["trajectory_json"])
        if item["level_source"] == "measured":
            assert item["level"] == trajectory["level"] and item["rounds"] == len(trajectory["rounds"])
            assert item["e_rounds"] == trajectory["round_kinds"].count("E")
        else:
            assert trajectory is None and item["level"] == estimated[item["id"]]
    confusion = report["confusion"]
    assert sum(sum(row.values()) for row in confusion.values()) == len(measured)
    assert sum(row["items"] for row in report["coverage"].values()) == len(items)
    # on by default (GraphDancer's default environment trains on them), named in the fingerprint
    assert SplitConfig().trajectories and SplitConfig().params() == {"seed": 0, "trajectories": True}
    assert SplitConfig(trajectories=False).params() == {"seed": 0}  # splits built without them stay as they were


def test_graph_cot_teacher_trajectories_replay_in_the_real_environment(certified) -> None:
    """GraphDancer's warm-start data: each measured item's Graph-CoT trajectory replays through the
    real Graph-CoT environment — every call valid, the trajectory's own answer, the environment's
    observations masked — and a trajectory whose call no longer runs is dropped."""
    from components.curriculum.build import measure_levels
    from components.llm.models import smollm2_tokenizer
    from components.rollout.runner import STOPS
    from components.tools.episodes import graph_cot_envs
    from components.training.stages import graph_cot_items
    from components.training.teacher import graph_cot_teacher_steps, teacher_records

    rows, schema = certified
    items = build_curriculum(rows, schema, _DB["path"], seed=0)
    measure_levels(items, rows, _DB["path"])
    usable = graph_cot_items(items, turns=4)  # at most 3 calls, then the answer
    assert usable and all(len(json.loads(i["trajectory_json"])["rounds"]) <= 3 for i in usable)
    traj = json.loads(usable[0]["trajectory_json"])
    traj["rounds"][0]["action"] = "RetrieveNode[]"  # no argument: an invalid call
    broken = dict(usable[0], id="broken", trajectory_json=json.dumps(traj))
    with graph_cot_envs(_DB["path"], max_rounds=3) as make_env:
        records, dropped = teacher_records(
            usable[:5] + [broken], graph_cot_teacher_steps, make_env, smollm2_tokenizer(), stops=STOPS
        )
    assert [d["id"] for d in dropped] == ["broken"] and len(records) == len(usable[:5])
    for rec, item in zip(records, usable, strict=False):
        rounds = len(json.loads(item["trajectory_json"])["rounds"])
        s = rec.stats
        assert s.answered and s.valid_format and s.valid_calls == rounds and s.invalid_calls == 0
        assert s.answer == json.loads(item["trajectory_json"])["answer"]
        assert [m for m, _ in rec.segments()] == [1, 0] * rounds + [1]  # observations masked
        assert "<information>" in rec.completion_text and "<graph>RetrieveNode[" in rec.completion_text
