"""ReadOnlyQueryPath: the one way user- and model-written queries reach a backend."""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from typing import Any

import pytest

from components.cypher.parse import parse_query
from components.cypher.query_path import ReadOnlyQueryPath, check_params
from components.cypher.schema_check import UsedTriple, check_schema, used_triples
from components.graph.backend import QueryResult
from components.graph.errors import (
    DialectError,
    GraphError,
    QueryExecutionError,
    QuerySyntaxError,
    SchemaError,
    UnsafeQueryError,
)
from components.graph.ladybug import LadybugBackend


class RecordingBackend:
    """Wraps a real backend and records what reaches it."""

    def __init__(self, inner: Any, dialect: str = "ladybug") -> None:
        self.inner = inner
        self.dialect = dialect
        self.calls: list[tuple[str, Mapping[str, Any] | None, int | None]] = []

    def run(self, query: str, params: Mapping[str, Any] | None = None, *, limit: int | None = None) -> QueryResult:
        self.calls.append((query, params, limit))
        if self.inner is None:
            return QueryResult(("x",), ((1,),))
        return self.inner.run(query, params, limit=limit)

    def schema(self) -> Any:
        return self.inner.schema()

    def fingerprint(self) -> str:
        return "x"

    def close(self) -> None:
        pass


@pytest.fixture
def recording(backend: LadybugBackend) -> RecordingBackend:
    return RecordingBackend(backend)


def test_runs_a_parameterised_read(path: ReadOnlyQueryPath) -> None:
    result = path.run(
        "MATCH (p:Person)-[:LIVES_IN]->(c:City {name: $city}) RETURN p.name ORDER BY p.name",
        {"city": "Paris"},
    )
    assert result.columns == ("p.name",)
    assert result.rows == (("Alice",), ("Bob",))


def test_limit_sets_truncated(path: ReadOnlyQueryPath) -> None:
    result = path.run("MATCH (p:Person) RETURN p.name ORDER BY p.name", limit=2)
    assert result.rows == (("Alice",), ("Bob",)) and result.truncated


@pytest.mark.parametrize("limit", [-1, 1.5, "3"])
def test_bad_limits_are_refused(path: ReadOnlyQueryPath, limit: Any) -> None:
    with pytest.raises(QueryExecutionError, match="limit"):
        path.run("RETURN 1 AS x", limit=limit)


def test_file_reads_are_refused_before_the_engine(recording: RecordingBackend) -> None:
    qp = ReadOnlyQueryPath(recording)
    for query in [
        "LOAD FROM '/etc/passwd' (file_format='csv', header=false) RETURN *",
        "LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row",
        "COPY (MATCH (n) RETURN n) TO '/tmp/x.csv'",
        "MATCH (n) DETACH DELETE n",
        "CALL db.labels()",
    ]:
        with pytest.raises(UnsafeQueryError):
            qp.run(query)
    assert recording.calls == []
    # the read-only engine itself reads the file (rows, or an error quoting its content):
    # the static refusal is what stops it
    try:
        leaked = bool(recording.inner.run("LOAD FROM '/etc/passwd' (file_format='csv') RETURN *").rows)
    except GraphError as err:
        leaked = "root:" in str(err)
    assert leaked


def test_preparation_is_cached(recording: RecordingBackend) -> None:
    qp = ReadOnlyQueryPath(recording)
    query = "MATCH (a:Person)-[r:KNOWS]->(b) RETURN type(r), count(*)"
    first = qp.prepared(query)
    assert qp.prepared(query) is first
    qp.run(query)
    qp.run(query)
    assert [c[0] for c in recording.calls] == [first.text, first.text]
    assert "label(r) AS `type(r)`" in first.text


def test_cache_is_bounded(recording: RecordingBackend) -> None:
    qp = ReadOnlyQueryPath(recording, cache_size=3)
    for i in range(10):
        qp.prepare(f"RETURN {i} AS x")
    assert len(qp._cache) == 3


def test_neo4j_dialect_gets_aliasing_only() -> None:
    fake = RecordingBackend(None, dialect="neo4j")
    qp = ReadOnlyQueryPath(fake)
    qp.run("MATCH (a)-[r:KNOWS*1..2]->(b) RETURN type(r[0]), a.name")
    assert fake.calls[0][0] == ("MATCH (a)-[r:KNOWS*1..2]->(b) RETURN type(r[0]) AS `type(r[0])`, a.name AS `a.name`")
    qp.run("MATCH (a) WHERE (a)-->() AND NOT (a)-[:KNOWS]->() RETURN a")
    assert fake.calls[1][0] == (
        "MATCH (a) WHERE EXISTS { MATCH (a)-->() } AND NOT EXISTS { MATCH (a)-[:KNOWS]->() } RETURN a AS a"
    )
    with pytest.raises(UnsafeQueryError):
        qp.run("CREATE (n)")


def test_unknown_dialect_is_refused() -> None:
    with pytest.raises(DialectError):
        ReadOnlyQueryPath(RecordingBackend(None, dialect="sqlite"))


# -- parameters -------------------------------------------------------------------------------


def test_json_like_params_pass() -> None:
    check_params(None)
    check_params({})
    check_params({"s": "x", "i": -(2**63), "f": 1.5, "b": True, "n": None, "l": [1, [2, {"k": "v"}]]})


@pytest.mark.parametrize(
    ("params", "word"),
    [
        ({"x": object()}, "object"),
        ({"x": {1, 2}}, "set"),
        ({"x": b"bytes"}, "bytes"),
        ({"x": float("nan")}, "finite"),
        ({"x": float("inf")}, "finite"),
        ({"x": 2**63}, "INT64"),
        ({"x": [1, {"k": object()}]}, "$x[1].k"),
        ({"x": {1: "a"}}, "keys"),
        ({"bad name": 1}, "invalid parameter name"),
        ({1: 1}, "invalid parameter name"),
        ({"x": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}, "nested"),
    ],
)
def test_non_json_like_params_are_refused(path: ReadOnlyQueryPath, params: dict[Any, Any], word: str) -> None:
    with pytest.raises(QueryExecutionError) as info:
        path.run("RETURN $x AS x", params)
    assert word in str(info.value)


def test_params_must_be_a_mapping() -> None:
    with pytest.raises(QueryExecutionError, match="mapping"):
        check_params([("x", 1)])  # type: ignore[arg-type]


def test_missing_params_are_named(path: ReadOnlyQueryPath) -> None:
    with pytest.raises(QueryExecutionError, match=r"\$min"):
        path.run("MATCH (p:Person) WHERE p.age > $min RETURN p.name")
    assert path.run("MATCH (p:Person) WHERE p.age > $min RETURN count(*)", {"min": 30}).rows == ((2,),)


# -- schema -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("MATCH (p:Persn) RETURN p", ["unknown node label 'Persn'", "'Person'"]),
        ("MATCH (p:Person)-[:KNOW]->(q) RETURN q", ["unknown relationship type 'KNOW'", "'KNOWS'"]),
        ("MATCH (p:Person) RETURN p.nme", ["unknown property 'nme' on :Person", "'name'"]),
        ("MATCH (p:Person {nam: 'x'}) RETURN p", ["'nam'", "'name'"]),
        ("MATCH (:Person)-[r:KNOWS]->() RETURN r.sinc", ["relationship :KNOWS", "'since'"]),
        ("MATCH (:Person)-[r:KNOWS {year: 1}]->() RETURN r", ["'year'"]),
        ("MATCH (p) WHERE p:Citty RETURN p", ["'Citty'", "'City'"]),
        ("MATCH (p) RETURN p.salary", ["no node label or relationship type has a property 'salary'"]),
        ("MATCH (p:Person) WITH p AS q RETURN q.nme", ["'nme'"]),
        ("MATCH (c:City) RETURN c.age", ["unknown property 'age' on :City"]),
    ],
)
def test_schema_errors_list_close_matches(path: ReadOnlyQueryPath, query: str, words: list[str]) -> None:
    with pytest.raises(SchemaError) as info:
        path.prepare(query)
    for word in words:
        assert word in str(info.value)


def test_schema_check_accepts_known_names(backend: LadybugBackend) -> None:
    schema = backend.schema()
    for query in [
        "MATCH (p:Person)-[r:KNOWS]->(q:Person) WHERE r.since > 2010 RETURN p.name, q.age",
        "MATCH (p)-[:LIVES_IN]->(c:City) RETURN c.population, p.tags",
        "MATCH (p:Person|City) RETURN p.name",
        "UNWIND [{a: 1}] AS m RETURN m.a",
    ]:
        check_schema(parse_query(query), schema)


def test_used_triples() -> None:
    parsed = parse_query(
        "MATCH (a:Person)-[:KNOWS]->(b)<-[:LIVES_IN]-(c:Person) MATCH (b:Person)-[:LIVES_IN]-(x) RETURN a"
    )
    assert used_triples(parsed) == [
        UsedTriple("Person", "KNOWS", "Person", True),
        UsedTriple("Person", "LIVES_IN", "Person", True),
        UsedTriple("Person", "LIVES_IN", None, False),
    ]


# -- failures are always GraphErrors ----------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        None,
        42,
        "",
        "((((",
        "MATCH (n) RETURN n.",
        "RETURN $",
        "MATCH (n) RETURN n ORDER BY",
        "RETURN 1 +",
        "MATCH p = shortestPath((a)-->()) RETURN p",
        "RETURN 'a' + 1",  # Ladybug: no string + integer (loud, never silent)
        "MATCH (n:Person) RETURN n.tags[5]",  # Ladybug: index out of range (Neo4j: null)
        "RETURN [1, 2][$i]",
        "\x00",
        "MATCH (n) RETURN n" + " " * 10 + ";" + "\n",
    ],
)
def test_every_failure_is_a_graph_error(path: ReadOnlyQueryPath, query: Any) -> None:
    try:
        path.run(query, {"i": "x"} if isinstance(query, str) and "$i" in query else None)
    except GraphError:
        pass


def test_syntax_error_message(path: ReadOnlyQueryPath) -> None:
    with pytest.raises(QuerySyntaxError, match=r"line 1, column \d+"):
        path.run("MATCH (n:Person RETURN n")


# -- performance --------------------------------------------------------------------------------


def test_cached_run_adds_only_microseconds() -> None:
    fake = RecordingBackend(None)
    qp = ReadOnlyQueryPath(fake)
    query = "MATCH (a:Person {name: $name})-[:KNOWS]->(b) RETURN b.name, type(r)"
    qp.run(query, {"name": "Alice"})
    samples = []
    for _ in range(2000):
        start = time.perf_counter()
        qp.run(query, {"name": "Alice"})
        samples.append(time.perf_counter() - start)
    assert statistics.median(samples) < 50e-6  # typically ~2 µs


def test_unicode_escapes_and_rand_are_refused_not_silently_changed() -> None:
    """Found in review: cypherast decodes '\\u00e9' as 'u00e9' (a silent value change), and
    rand() makes evidence impossible to re-execute."""
    import pytest as _pytest

    from components.cypher.compat import to_ladybug
    from components.cypher.parse import parse_query
    from components.graph.errors import DialectError

    with _pytest.raises(DialectError, match="unicode escapes"):
        parse_query("RETURN 'Jos\\u00e9' AS x")
    assert parse_query("RETURN 'a\\\\u' AS y")  # an escaped backslash followed by u is fine
    with _pytest.raises(DialectError, match="nondeterministic"):
        to_ladybug(parse_query("RETURN rand() AS r"))
