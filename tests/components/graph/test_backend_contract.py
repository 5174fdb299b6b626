"""One contract suite for every GraphBackend (Neo4j runs only when NEO4J_URI is set)."""

from __future__ import annotations

import decimal

import pytest

from components.graph.backend import GraphBackend
from components.graph.errors import QuerySyntaxError, UnsafeQueryError
from components.graph.ladybug import LadybugBackend


def test_backend_implements_protocol(backend) -> None:
    assert isinstance(backend, GraphBackend)
    assert backend.dialect in {"ladybug", "neo4j"}


def test_scalar_values_are_plain_python(backend) -> None:
    res = backend.run(
        "MATCH (p:Person {id: $id}) RETURN p.name AS name, p.age AS age, p.score AS score, "
        "p.born AS born, p.tags AS tags",
        {"id": "ann"},
    )
    assert res.columns == ("name", "age", "score", "born", "tags")
    assert res.rows == (("Ann", 34, 1.5, "1990-05-01", ["a", "b"]),)
    assert not res.truncated


def test_integer_sum_is_int_not_decimal(backend) -> None:
    (row,) = backend.run("MATCH (p:Person) RETURN sum(p.age) AS s, count(p) AS n").rows
    assert row == (156, 4)
    assert type(row[0]) is int and not isinstance(row[0], decimal.Decimal)


def test_nodes_relationships_and_paths_are_normalised(backend) -> None:
    res = backend.run("MATCH (a:Person {id: 'ann'})-[r:KNOWS]->(b:Person) RETURN a AS a, r AS r, b AS b")
    a, r, b = res.rows[0]
    assert a == {
        "_label": "Person",
        "id": "ann",
        "name": "Ann",
        "age": 34,
        "score": 1.5,
        "born": "1990-05-01",
        "tags": ["a", "b"],
    }
    assert r == {"_type": "KNOWS", "since": 2010}
    assert b["_label"] == "Person" and b["id"] == "bob"
    # null properties are dropped, as Neo4j never stores them
    (dan,) = backend.run("MATCH (d:Person {id: 'dan'}) RETURN d AS d").rows[0]
    assert "score" not in dan and "born" not in dan
    (path,) = backend.run("MATCH path = (a:Person {id: 'ann'})-[:KNOWS]->(b:Person) RETURN path AS path").rows[0]
    assert [n["id"] for n in path["nodes"]] == ["ann", "bob"]
    assert path["relationships"] == [{"_type": "KNOWS", "since": 2010}]


def test_list_parameters_and_ordering(backend) -> None:
    res = backend.run(
        "MATCH (p:Person) WHERE p.id IN $ids RETURN p.name AS name ORDER BY p.age DESC",
        {"ids": ["ann", "bob", "zed"]},
    )
    assert [r[0] for r in res.rows] == ["Bob", "Ann"]


@pytest.mark.parametrize(
    ("limit", "n_rows", "truncated"), [(2, 2, True), (3, 3, True), (4, 4, False), (10, 4, False), (0, 0, True)]
)
def test_limit_fetches_one_extra_row_to_flag_truncation(backend, limit, n_rows, truncated) -> None:
    res = backend.run("MATCH (p:Person) RETURN p.id AS id ORDER BY id", limit=limit)
    assert len(res.rows) == n_rows
    assert res.truncated is truncated


def test_schema_has_directed_triples_types_and_counts(backend) -> None:
    schema = backend.schema()
    assert schema.triples() == {
        ("Person", "KNOWS", "Person"),
        ("Person", "LIVES_IN", "City"),
        ("Person", "WORKS_AT", "Company"),
        ("Company", "LOCATED_IN", "City"),
    }
    assert schema.has_triple("Person", "WORKS_AT", "Company")
    assert not schema.has_triple("Company", "WORKS_AT", "Person")
    labels = schema.labels
    assert {k: v.count for k, v in labels.items()} == {"Person": 4, "City": 2, "Company": 1}
    assert labels["Person"].properties["age"] == "INT64"
    assert labels["Person"].properties["born"] == "DATE"
    assert labels["Person"].properties["tags"] == "STRING[]"
    assert labels["Company"].properties["public"] == "BOOLEAN"
    assert schema.types["WORKS_AT"].properties == {"since": "INT64"}
    assert schema.types["LIVES_IN"].count == 4
    assert (schema.node_count, schema.rel_count) == (7, 10)


def test_fingerprint_is_identical_across_backends(backend, contract_db) -> None:
    with LadybugBackend(contract_db) as reference:
        expected = reference.fingerprint()
    assert backend.fingerprint() == expected


def test_writes_are_refused_by_the_engine_and_data_is_unchanged(backend) -> None:
    before = backend.fingerprint()
    with pytest.raises(UnsafeQueryError):
        backend.run("CREATE (:City {id: 'rome', name: 'Rome', population: 1})")
    with pytest.raises(UnsafeQueryError):
        backend.run("MATCH (p:Person {id: 'ann'}) SET p.age = 99")
    assert backend.fingerprint() == before


def test_syntax_error_reports_position(backend) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        backend.run("MATCH (p:Person RETURN p")
    assert "line 1" in str(info.value)


def test_unreachable_neo4j_is_a_clear_error() -> None:
    from components.graph.errors import DatabaseUnavailableError
    from components.graph.neo4j import Neo4jBackend

    with pytest.raises(DatabaseUnavailableError, match="Neo4j is unavailable"):
        Neo4jBackend("bolt://127.0.0.1:9", "neo4j", "x", connection_timeout_s=2)


def test_wrong_neo4j_credentials_are_a_clear_error(neo4j_uri: str) -> None:
    from components.graph.errors import AuthenticationError
    from components.graph.neo4j import Neo4jBackend

    with pytest.raises(AuthenticationError, match="credentials"):
        Neo4jBackend(neo4j_uri, "neo4j", "definitely-not-the-password")
