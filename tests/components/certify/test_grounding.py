"""Cut determinism, direct grounding and the perturbation replay, on the real contract graph."""

from __future__ import annotations

import pytest

from components.certify.dataflow import answer_flow
from components.certify.grounding import PerturbedQueryPath, cut_state, directness, perturbation_changes
from components.cypher.query_path import ReadOnlyQueryPath
from components.tools.traced import MAX_ROWS, TracedResult


@pytest.fixture()
def qp(ladybug_backend):
    return ReadOnlyQueryPath(ladybug_backend, schema=ladybug_backend.schema())


def _cut(qp, query: str, params: dict | None = None):
    res = qp.run(query, params or {}, limit=MAX_ROWS)
    return cut_state(query, params or {}, res.rows, qp)


@pytest.mark.parametrize(
    ("query", "params", "state"),
    [
        ("MATCH (p:Person) RETURN p.name", {}, "complete"),
        ("MATCH (p:Person) RETURN p.name LIMIT 2", {}, "arbitrary"),  # no ORDER BY
        ("MATCH (p:Person) RETURN p.name LIMIT 10", {}, "complete"),  # cuts nothing
        ("MATCH (p:Person) RETURN p.name LIMIT 4", {}, "complete"),  # exactly all rows
        ("MATCH (p:Person) RETURN p.name ORDER BY p.age DESC LIMIT 1", {}, "top"),  # key not projected
        ("MATCH (p:Person) RETURN p.name AS n, p.age AS a ORDER BY a SKIP 1 LIMIT 2", {}, "top"),
        ("MATCH (p:Person) RETURN p.name ORDER BY p.age LIMIT $k", {"k": 2}, "top"),
        ("MATCH (p:Person)-[:LIVES_IN]->(c:City) RETURN c.name AS city ORDER BY city LIMIT 1", {}, "arbitrary"),  # tie
        ("MATCH (p:Person)-[:LIVES_IN]->(c:City) RETURN DISTINCT c.name AS city ORDER BY city LIMIT 1", {}, "top"),
        ("MATCH (p:Person) RETURN p.name SKIP 1", {}, "arbitrary"),
        ("MATCH (p:Person) WITH p ORDER BY p.age LIMIT 2 RETURN p.name", {}, "unverifiable"),
    ],
)
def test_cut_state(qp, query: str, params: dict, state: str) -> None:
    assert _cut(qp, query, params).state == state


def _traced(qp, query: str) -> TracedResult:
    res = qp.run(query, {}, limit=MAX_ROWS)
    return TracedResult.build("e:q1", query, {}, res.columns, res.rows, res.truncated)


def _direct(qp, query: str, value, answer_type: str, program_tail: str):
    ev = _traced(qp, query)
    flow = answer_flow(f"r = cypher({query!r})\n{program_tail}", answer_type)
    return directness(value, answer_type, [ev], flow)[0]


def test_direct_and_partial_answers(qp) -> None:
    whole = "MATCH (p:Person {id: 'ann'}) RETURN p"
    assert _direct(qp, whole, "Ann", "entity", "print(r.rows[0][0]['name'])") is None
    assert _direct(qp, whole, 34, "number", "print(r.rows[0][0]['age'])") is None
    nodes = "MATCH (p:Person)-[:LIVES_IN]->(:City {name: 'Paris'}) RETURN p"
    assert _direct(qp, nodes, ["Ann", "Bob"], "set", "print([rec['p']['name'] for rec in r.records()])") is None
    # one value of a multi-row node result is a selection, never pooled into directness
    assert _direct(qp, nodes, 41, "number", "print(r.rows[1][0]['age'])") == "selected_from_broader_evidence"
    assert _direct(qp, nodes, 2, "number", "print(len(r.rows))") is None  # a row count
    assert (
        _direct(qp, "MATCH (p:Person)-[:LIVES_IN]->(c:City) RETURN c.name", 4, "number", "print(len(r.rows))")
        == "counted_duplicate_rows"
    )
    assert _direct(qp, nodes, True, "boolean", "print(len(r.rows) > 0)") is None
    assert (
        _direct(
            qp,
            "MATCH (p:Person) RETURN collect(p.name) AS names",
            ["Ann", "Bob", "Cat", "Dan"],
            "set",
            "print(sorted(r.rows[0][0]))",
        )
        is None
    )
    listing = "MATCH (p:Person) RETURN p.name, p.age"
    assert (
        _direct(qp, listing, "Dan", "entity", "print(max(r.rows, key=lambda x: x[1])[0])")
        == "selected_from_broader_evidence"
    )
    assert (
        _direct(qp, listing, 52, "number", "print(max(row[1] for row in r.rows))") == "selected_from_broader_evidence"
    )
    assert _direct(qp, listing, 156, "number", "print(sum(row[1] for row in r.rows))") == "derived_value"
    # the path's nodes are the values of a single path cell
    path = "MATCH p = (:Person {id: 'ann'})-[:KNOWS]->(:Person) RETURN p"
    assert _direct(qp, path, ["Ann", "Bob"], "set", "print(sorted(n['name'] for n in r.rows[0][0]['nodes']))") is None


def test_internal_keys_never_ground(qp) -> None:
    from components.quizzer.final import answer_in_rows

    ev = _traced(qp, "MATCH (p:Person {id: 'ann'}) RETURN p")
    assert answer_in_rows("Ann", "entity", [ev]) and not answer_in_rows("Person", "entity", [ev])


def test_perturbation_replay(qp, contract_db) -> None:
    from components.graph.ladybug import LadybugBackend

    schema = LadybugBackend(contract_db).schema()
    q = "MATCH (p:Person {id: 'ann'}) RETURN p.age AS age"
    head = f"r = cypher({q!r})\nmark_evidence(r)\n"
    assert perturbation_changes(head + "print(r.rows[0][0] + 1)", 35, "number", qp, schema)[0]
    changed, why = perturbation_changes(head + "print(r.rows[0][0] * 0 + 8)", 8, "number", qp, schema)
    assert not changed and "stays the same" in why
    # every perturbation really changes what the program sees
    for mode, rows in [("values", ((69,),)), ("drop_first", ()), ("empty", ())]:
        assert PerturbedQueryPath(qp, mode).run(q, {}).rows == rows
