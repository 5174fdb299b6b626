"""The node-id split keys on real certified rows of a generated academic graph (template quizzer,
real certifier, embedded Ladybug): anchors, answers and walked nodes keyed by node id, hubs and
only-counted nodes left out, and no node crossing splits — where the name-keyed answers of the
previous rule let a question's subject sit in test while another question answers with it in
train."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from components.certify.dataset import CertifyConfig, run_certification
from components.curriculum.build import (
    CURRICULUM_SPLITS,
    HUB_DEGREE,
    NodeKeys,
    build_curriculum,
    curriculum_summary,
    grounded_entities,
    key_query,
)
from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.sources.demo import generate
from components.quizzer.context import display_property
from components.quizzer.template import TemplateQuizzer


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory):
    db = tmp_path_factory.mktemp("keys") / "db"
    load_graph(generate("academic", seed=0, scale=300), db)
    with LadybugBackend(db) as b:
        schema = b.schema()
        cands = TemplateQuizzer(ReadOnlyQueryPath(b, schema=schema), schema, seed=4).generate(60)
        fp = b.fingerprint()
    for c in cands:
        c.meta["snapshot_fingerprint"] = fp
    rows = [r for r in run_certification(cands, str(db), CertifyConfig(fault_sample=0)).rows if r["admitted"]]
    backend = LadybugBackend(db)
    qp = ReadOnlyQueryPath(backend, schema=schema)
    yield {"db": str(db), "rows": rows, "schema": schema, "backend": backend, "qp": qp}
    backend.close()


def _name_keyed(row: dict) -> set[str]:
    """The previous rule's keys: the start node and string parameters by id, answers by name."""
    keys = {f"node:{json.loads(row['start_node_json'])['id']}"}
    for ev in json.loads(row["evidence_json"]):
        keys |= {f"node:{v}" for v in ev["params"].values() if isinstance(v, str)}
    if row["answer_type"] in ("entity", "set"):
        value = json.loads(row["answer_value_json"])
        keys |= {f"name:{v.casefold()}" for v in (value if isinstance(value, list) else [value])}
    return keys


def _degree(qp: ReadOnlyQueryPath, node_id: str) -> int:
    (degree,) = qp.run("MATCH (n) WHERE n.id = $id RETURN COUNT { (n)--() }", {"id": node_id}).rows[0]
    return int(degree)


def _answer_nodes(graph: dict, row: dict) -> set[str]:
    """An oracle independent of the keyer: every node of any label named like an answer value."""
    if row["answer_type"] not in ("entity", "set"):
        return set()
    value = json.loads(row["answer_value_json"])
    out: set[str] = set()
    for v in value if isinstance(value, list) else [value]:
        for label in graph["schema"].labels:
            prop = display_property(graph["schema"], label)
            q = f"MATCH (n:{label}) WHERE n.{prop} = $v RETURN n.id"
            out |= {r[0] for r in graph["qp"].run(q, {"v": v}).rows}
    return out


def test_a_subject_answered_elsewhere_shares_the_split_the_name_keys_missed(graph) -> None:
    rows, backend, qp = graph["rows"], graph["backend"], graph["qp"]
    items = build_curriculum(rows, graph["schema"], backend, fractions=(0.4, 0.3, 0.3), seed=0)
    by_id = {i["id"]: i for i in items}
    subject = {r["id"]: json.loads(r["start_node_json"])["id"] for r in rows}
    pairs = [
        (a, b["id"], node)
        for a, node in subject.items()
        for b in rows
        if b["id"] != a and node in _answer_nodes(graph, b) and _degree(qp, node) <= HUB_DEGREE
    ]
    assert len(pairs) >= 3  # the subject of one question is the answer of another
    missed = []
    for a, b, node in pairs:
        assert f"node:{node}" in set(by_id[a]["entities"]) & set(by_id[b]["entities"])
        assert by_id[a]["split"] == by_id[b]["split"]
        old_a, old_b = (_name_keyed(next(r for r in rows if r["id"] == i)) for i in (a, b))
        if f"node:{node}" not in old_b and not old_a & old_b:
            missed.append((a, b))
    assert missed  # pairs the previous keys did not tie together: free to land in different splits
    # every non-hub subject or answer node, found without the keyer, sits in one split
    where: dict[str, set[str]] = {}
    for r in rows:
        for node in {subject[r["id"]]} | _answer_nodes(graph, r):
            if _degree(qp, node) <= HUB_DEGREE:
                where.setdefault(node, set()).add(by_id[r["id"]]["split"])
    assert where and all(len(s) == 1 for s in where.values())
    summary = curriculum_summary(items)
    assert summary["crossing_entities"] == [] and len({i["split"] for i in items}) == 3


def test_walked_nodes_are_keyed_and_only_counted_nodes_are_not(graph) -> None:
    backend, schema, qp = graph["backend"], graph["schema"], graph["qp"]
    (author,) = qp.run(
        "MATCH (a:Author)-[:WROTE]->(p:Paper) WITH a, count(p) AS n WHERE n >= 2 RETURN a.id ORDER BY a.id LIMIT 1"
    ).rows[0]
    walk = (
        "MATCH (s:Author {id: $start})-[:WROTE]->(p:Paper)-[:PUBLISHED_IN]->(v:Venue) RETURN DISTINCT v.name AS answer"
    )
    count = "MATCH (s:Author {id: $start})-[:WROTE]->(p:Paper)-[:CITES]->(x:Paper) RETURN count(DISTINCT x) AS answer"
    papers = {r[0] for r in qp.run("MATCH (:Author {id: $a})-[:WROTE]->(p:Paper) RETURN p.id", {"a": author}).rows}
    venues = qp.run(
        "MATCH (:Author {id: $a})-[:WROTE]->(:Paper)-[:PUBLISHED_IN]->(v:Venue) RETURN DISTINCT v.id, v.name",
        {"a": author},
    ).rows
    cited = {
        r[0]
        for r in qp.run(
            "MATCH (:Author {id: $a})-[:WROTE]->(:Paper)-[:CITES]->(x:Paper) RETURN x.id", {"a": author}
        ).rows
    }

    def row(rid: str, query: str, answer_type: str, answer: object) -> dict:
        start = {"id": author, "label": "Author"}
        evidence = [{"query": query, "params": {"start": author}}]
        return {
            "id": rid,
            "admitted": True,
            "start_node_json": json.dumps(start),
            "evidence_json": json.dumps(evidence),
            "answer_type": answer_type,
            "answer_value_json": json.dumps(answer),
        }

    keyer = NodeKeys(backend, schema, hub_degree=10**9)
    keys = keyer.keys([row("walk", walk, "set", sorted(n for _, n in venues)), row("count", count, "number", 1)])
    assert keys["walk"].anchors == {author}
    assert keys["walk"].walked == {author} | papers | {v for v, _ in venues}  # the papers it walks through
    assert keys["walk"].answers == {v for v, _ in venues}
    assert keys["count"].walked == set() and not (set(keys["count"].keys) - {f"node:{author}"})
    assert cited - papers  # the counted papers exist, and none of them became a key
    assert key_query(count, schema) is None and keyer.report["queries_without_walked_variables"] == 1
    ranked = key_query(
        "MATCH (s:Venue {id: $start})<-[:PUBLISHED_IN]-(m:Paper), (m)-[:CITES]->(x:Paper) "
        "RETURN m.title AS name, count(DISTINCT x) AS score ORDER BY score DESC, name LIMIT 1",
        schema,
    )
    assert ranked.counted == ("x",)  # s is the anchor (keyed by $start), x only counted
    assert ranked.text.endswith("collect(DISTINCT m.id) AS gd_key_0 ORDER BY score DESC, name LIMIT 1")
    through_with = key_query("MATCH (s:Paper {id: $id})<-[:CITES]-(x:Paper) WITH x AS y RETURN y.title", schema)
    assert through_with.text.endswith("RETURN DISTINCT y.id AS gd_key_0") and through_with.labels == {"y": "Paper"}


def test_hubs_are_never_keys_and_the_summary_counts_them(graph) -> None:
    rows, backend, schema, qp = graph["rows"], graph["backend"], graph["schema"], graph["qp"]
    items = build_curriculum(rows, schema, backend, seed=0)
    summary = curriculum_summary(items)["keys"]
    kept = {e for i in items for e in i["entities"]}
    hubs = Counter(e for i in items for e in i["hub_entities"])
    assert hubs and summary["hub_degree"] == HUB_DEGREE == 50
    assert summary["hub_keys_dropped"] == len(hubs) and summary["hub_key_uses_dropped"] == sum(hubs.values())
    assert summary["node_keys"] == len(kept) and not kept & set(hubs)
    for key in hubs:
        assert _degree(qp, key.removeprefix("node:")) > HUB_DEGREE
    for key in kept:
        assert _degree(qp, key.removeprefix("node:")) <= HUB_DEGREE
    for item, r in zip(items, rows, strict=True):  # the graph-free keys are what the keyer starts from
        assert {e for e in grounded_entities(r)} <= set(item["entities"]) | set(item["hub_entities"])
    everything = NodeKeys(backend, schema, hub_degree=10**9).keys(rows)
    assert all(not k.hubs for k in everything.values())
    assert sum(len(k.keys) for k in everything.values()) > sum(len(i["entities"]) for i in items)


def test_the_layer_fingerprints_the_split_rule() -> None:
    """A changed key or hub rule (build.py) or grouping (splits.py) gives a new artifact: both
    files are part of the layer's code digest."""
    from components.store.digest import code_files

    files = code_files(CURRICULUM_SPLITS.code_modules)
    assert {"components/curriculum/build.py", "components/curriculum/splits.py"} <= set(files)
