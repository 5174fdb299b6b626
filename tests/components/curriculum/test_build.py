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
    two_hop = [features_json("MATCH (a:Author {id: $id})-[:WROTE]->(p:Paper)-[:PUBLISHED_IN]->(v:Venue) RETURN v.name", schema)]
    assert estimate_rounds(two_hop, schema, "Author") == [papers_per_author, 1]
    assert estimate_rounds([{"ok": False}], schema, "Author") == [1]


def test_curriculum_levels_and_splits(certified) -> None:
    rows, schema = certified
    items = build_curriculum(rows, schema, seed=1)
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
