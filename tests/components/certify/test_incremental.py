"""Incremental re-certification equals a full re-certification: a real graph changed in one
label, real template candidates, the real certifier (checks 1–4 in real sandboxes)."""

from __future__ import annotations

import json

import pytest

from components.certify.dataset import CertifyConfig, run_certification
from components.certify.incremental import (
    ALL,
    CERT_COLUMNS,
    affected,
    candidate_key,
    candidate_reads,
    query_reads,
    reusable_certificates,
)
from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.fingerprint import changed_parts
from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.sources.demo import generate
from components.quizzer.candidate import QACandidate
from components.quizzer.template import TemplateQuizzer


def _pinned(cands: list[QACandidate], fingerprint: str) -> list[QACandidate]:
    out = []
    for c in cands:
        copy = QACandidate.from_record(c.to_record())
        copy.meta["snapshot_fingerprint"] = fingerprint
        out.append(copy)
    return out


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("incremental")
    g = generate("academic", seed=0, scale=200)
    load_graph(g, root / "a")
    for row in g.nodes["Venue"].rows:  # the change: every venue renamed, nothing else touched
        row["name"] = f"{row['name']} (renamed)"
    load_graph(g, root / "b")
    out = {}
    for name in ("a", "b"):
        with LadybugBackend(root / name) as backend:
            fp, parts = backend.fingerprints()
            assert fp == backend.fingerprint()
            out[name] = {"db": str(root / name), "fp": fp, "parts": parts}
            if name == "a":
                schema = backend.schema()
                cands = TemplateQuizzer(ReadOnlyQueryPath(backend, schema=schema), schema, seed=3).generate(40)
    config = CertifyConfig(fault_sample=2)
    before = run_certification(_pinned(cands, out["a"]["fp"]), out["a"]["db"], config)
    return {**out, "cands": cands, "config": config, "before": before}


def test_part_fingerprints_name_exactly_the_changed_label(graphs) -> None:
    assert graphs["a"]["fp"] != graphs["b"]["fp"]
    assert set(graphs["a"]["parts"]) == {
        "node:Author",
        "node:Paper",
        "node:Venue",
        "rel:CITES",
        "rel:PUBLISHED_IN",
        "rel:WROTE",
    }
    assert changed_parts(graphs["a"]["parts"], graphs["b"]["parts"]) == {"node:Venue"}
    assert changed_parts(graphs["a"]["parts"], graphs["a"]["parts"]) == set()


def test_incremental_recertification_equals_a_full_one(graphs) -> None:
    changed = changed_parts(graphs["a"]["parts"], graphs["b"]["parts"])
    cands = _pinned(graphs["cands"], graphs["b"]["fp"])
    full = run_certification(cands, graphs["b"]["db"], graphs["config"])
    reuse = reusable_certificates(graphs["before"].rows, changed)
    incremental = run_certification(cands, graphs["b"]["db"], graphs["config"], reuse=reuse)
    assert incremental.rows == full.rows  # every column of every row, in order
    assert incremental.accuracy == full.accuracy
    n = len(cands)
    assert 0 < incremental.reused < n  # some reused, some re-verified
    reads = {r["id"]: set(json.loads(r["reads_json"])) for r in full.rows}
    reverified = [c.id for c in cands if candidate_key(c.to_record()) not in reuse]
    assert reverified and all("node:Venue" in reads[i] or ALL in reads[i] for i in reverified)
    # the re-verification mattered: a venue-name candidate certified on A fails on B
    before = {r["id"]: r["status"] for r in graphs["before"].rows}
    after = {r["id"]: (r["status"], r["reasons"]) for r in full.rows}
    flipped = [i for i in reverified if before[i] != "hard_failure" and after[i][0] == "hard_failure"]
    assert flipped and all(after[i][1] == ["result_mismatch"] for i in flipped)


def test_an_unchanged_graph_reuses_every_certificate(graphs) -> None:
    cands = _pinned(graphs["cands"], graphs["a"]["fp"])
    reuse = reusable_certificates(graphs["before"].rows, set())
    again = run_certification(cands, graphs["a"]["db"], graphs["config"], reuse=reuse)
    assert again.reused == len(cands) and again.rows == graphs["before"].rows


def test_rows_add_exactly_the_certificate_columns(graphs) -> None:
    row = graphs["before"].rows[0]
    assert set(row) - set(graphs["cands"][0].to_record()) == CERT_COLUMNS


@pytest.mark.parametrize(
    ("query", "reads"),
    [
        ("MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN p.title", {"node:Author", "node:Paper", "rel:WROTE"}),
        (
            "MATCH (a:Author) WHERE EXISTS { (a)-[:CITES]->(:Paper) } RETURN a",
            {"node:Author", "node:Paper", "rel:CITES"},
        ),
        ("MATCH (p:Paper)-[]->(x:Venue) RETURN x", {ALL}),  # any relationship type
        ("MATCH (n) RETURN count(n)", {ALL}),  # any label
        ("MATCH (a:Author) RETURN a UNION MATCH (a) RETURN a", {ALL}),  # a rebinds across UNION
        ("MATCH (a:Author|Paper) RETURN a", {ALL}),  # a label expression
        ("this is not cypher", {ALL}),
    ],
)
def test_query_reads_is_conservative(query: str, reads: set[str]) -> None:
    assert set(query_reads(query)) == reads


def test_affected_and_malformed_evidence() -> None:
    assert not affected({"node:Author"}, {"node:Venue"}) and affected({"node:Venue"}, {"node:Venue"})
    assert affected({ALL}, {"rel:CITES"}) and not affected({ALL}, set())
    assert candidate_reads("not a list") == {ALL} and candidate_reads([{"query": 3}]) == {ALL}
    assert candidate_reads([{"query": "MATCH (v:Venue) RETURN v.name"}], ["MATCH (p:Paper) RETURN p"]) == {
        "node:Venue",
        "node:Paper",
    }
