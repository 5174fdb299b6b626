"""Neo4j → Ladybug rewrites, executed on a real Ladybug database: every rewritten query must
return what Neo4j returns (expected rows are Neo4j's, computed by hand or by ``trails``), and every
construct that would silently differ must be refused."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from components.cypher.compat import GENERATED_PREFIX, to_ladybug, to_neo4j
from components.cypher.parse import parse_query
from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.errors import DialectError, QueryExecutionError
from components.graph.ladybug import LadybugBackend
from tests.components.cypher.conftest import KNOWS, NAMES, trails


def rows(path: ReadOnlyQueryPath, query: str, **params: Any) -> list[tuple[Any, ...]]:
    return list(path.run(query, params or None).rows)


def column(path: ReadOnlyQueryPath, query: str, **params: Any) -> list[Any]:
    return [r[0] for r in rows(path, query, **params)]


def one(path: ReadOnlyQueryPath, query: str, **params: Any) -> Any:
    (row,) = rows(path, query, **params)
    return row


# -- relationship uniqueness ------------------------------------------------------------------


def test_a_match_never_binds_one_relationship_twice(path: ReadOnlyQueryPath, backend: LadybugBackend) -> None:
    query = "MATCH (a)-[:KNOWS]->(b)<-[:KNOWS]-(a) RETURN a.name, b.name"
    # Ladybug alone binds each relationship twice: one row per KNOWS relationship
    assert len(backend.run(query).rows) == len(KNOWS)
    # Neo4j: the two relationship patterns must be different relationships -> no rows
    assert rows(path, query) == []
    assert f"id({GENERATED_PREFIX}r0) <> id({GENERATED_PREFIX}r1)" in path.prepare(query)


def test_undirected_two_hop_uniqueness(path: ReadOnlyQueryPath) -> None:
    got = column(path, "MATCH (a:Person {name: 'Alice'})-[:KNOWS]-(b)-[:KNOWS]-(c) RETURN c.name")
    assert sorted(got) == ["Alice", "Alice", "Bob", "Carol", "Carol", "Dave", "Dave"]


def test_uniqueness_only_between_compatible_types(path: ReadOnlyQueryPath) -> None:
    text = path.prepare("MATCH (a)-[:KNOWS]->(b)-[:LIVES_IN]->(c) RETURN c.name")
    assert "<>" not in text and GENERATED_PREFIX not in text


def test_variable_length_paths_are_trails(path: ReadOnlyQueryPath) -> None:
    got = column(path, "MATCH (:Person {name: 'Alice'})-[:KNOWS*1..5]->(b) RETURN b.name")
    expected = [NAMES[KNOWS[t[-1]][1]] for t in trails("p1", 1, 5)]
    assert Counter(got) == Counter(expected)
    assert "* TRAIL 1..5" in path.prepare("MATCH (:Person {name: 'Alice'})-[:KNOWS*1..5]->(b) RETURN b.name")


def test_zero_length_lower_bound(path: ReadOnlyQueryPath) -> None:
    got = column(path, "MATCH (:Person {name: 'Eve'})-[:KNOWS*0..1]->(b) RETURN b.name")
    assert sorted(got) == ["Dave", "Eve"]


def test_fixed_and_variable_length_relationships_are_distinct(path: ReadOnlyQueryPath) -> None:
    (count,) = one(path, "MATCH (a:Person)-[r:KNOWS]->(b:Person)-[:KNOWS*1..3]->(c:Person) RETURN count(*)")
    assert count == sum(1 for _ in trails(None, 2, 4))


def test_two_variable_length_relationships_are_distinct(path: ReadOnlyQueryPath) -> None:
    (count,) = one(path, "MATCH (a)-[:KNOWS*1..2]->(b)-[:KNOWS*1..2]->(c) RETURN count(*)")
    expected = sum(sum(1 for k in range(1, 3) if 1 <= len(t) - k <= 2) for t in trails(None, 2, 4))
    assert count == expected


def test_variable_length_variable_is_a_list_of_relationships(path: ReadOnlyQueryPath) -> None:
    got = rows(
        path,
        "MATCH (:Person {name: 'Alice'})-[e:KNOWS*2..2]->(:Person {name: 'Dave'}) "
        "WITH e RETURN size(e) AS hops, e[0].since AS first ORDER BY first",
    )
    assert got == [(2, 2011), (2, 2016)]


def test_aggregates_of_no_rows(path: ReadOnlyQueryPath) -> None:
    assert one(
        path,
        "MATCH (p:Person {name: 'Nobody'}) "
        "RETURN sum(p.age), avg(p.age), count(*), count(p), collect(p.name), min(p.age)",
    ) == (0, None, 0, 0, [], None)
    assert one(path, "UNWIND [1, null, 2] AS x RETURN collect(x), count(x), sum(x)") == ([1, 2], 2, 3)


# -- ordering -----------------------------------------------------------------------------------


def test_order_survives_a_following_aggregation(path: ReadOnlyQueryPath, backend: LadybugBackend) -> None:
    query = "MATCH (p:Person) WITH p ORDER BY p.age DESC LIMIT 2 RETURN avg(p.age)"
    (raw,) = backend.run(query).rows[0]
    assert raw != 37.5  # Ladybug alone drops the ORDER BY and averages two arbitrary people
    assert one(path, query) == (37.5,)  # Dave (40) and Carol (35)
    assert one(path, "MATCH (p:Person) WITH p.age AS a ORDER BY a SKIP 3 RETURN sum(a)") == (75,)
    assert one(path, "MATCH (p:Person) WITH DISTINCT p.age AS a ORDER BY a DESC LIMIT 2 RETURN sum(a)") == (75,)


def test_order_feeds_collect(path: ReadOnlyQueryPath) -> None:
    # Ladybug refuses ORDER BY in WITH without SKIP/LIMIT; Neo4j passes the order on to collect
    assert one(path, "MATCH (p:Person) WITH p ORDER BY p.age RETURN collect(p.name)") == (
        ["Bob", "Eve", "Alice", "Carol", "Dave"],
    )
    got = rows(
        path,
        "MATCH (p:Person)-[:KNOWS]->(q) WITH p, q ORDER BY q.age DESC RETURN p.name, collect(q.name) ORDER BY p.name",
    )
    assert got == [
        ("Alice", ["Carol", "Eve", "Bob"]),
        ("Bob", ["Carol", "Alice"]),
        ("Carol", ["Dave"]),
        ("Eve", ["Dave"]),
    ]


# -- shortest paths -----------------------------------------------------------------------------


def test_shortest_path(path: ReadOnlyQueryPath) -> None:
    query = (
        "MATCH p = shortestPath((a:Person {name: 'Alice'})-[:KNOWS*]->(b:Person {name: 'Dave'})) "
        "RETURN length(p), [n IN nodes(p) | n.name] AS names"
    )
    length, names = one(path, query)
    assert length == 2 and names in (["Alice", "Carol", "Dave"], ["Alice", "Eve", "Dave"])
    assert "* SHORTEST 1..30" in path.prepare(query)


def test_all_shortest_paths(path: ReadOnlyQueryPath) -> None:
    got = column(
        path,
        "MATCH p = allShortestPaths((a:Person {name: 'Alice'})-[:KNOWS*..5]->(b:Person {name: 'Dave'})) "
        "RETURN [n IN nodes(p) | n.name]",
    )
    assert sorted(got) == [["Alice", "Carol", "Dave"], ["Alice", "Eve", "Dave"]]


# -- functions ----------------------------------------------------------------------------------


def test_type_becomes_label(path: ReadOnlyQueryPath) -> None:
    got = rows(path, "MATCH (:Person {name: 'Alice'})-[r]->(x) RETURN type(r) AS t, x.name ORDER BY t, x.name")
    assert got == [("KNOWS", "Bob"), ("KNOWS", "Carol"), ("KNOWS", "Eve"), ("LIVES_IN", "Paris")]


def test_labels_id_and_element_id(path: ReadOnlyQueryPath) -> None:
    labels, node_id, element_id = one(path, "MATCH (n:City {name: 'Rome'}) RETURN labels(n), id(n), elementId(n)")
    assert labels == ["City"] and isinstance(node_id, int) and isinstance(element_id, str)
    assert one(path, "MATCH (n:City {name: 'Rome'}) RETURN id(n)") == (node_id,)  # deterministic
    ids = column(path, "MATCH (n) RETURN id(n)")
    assert len(set(ids)) == len(ids) == 7  # unique across labels
    assert one(path, "OPTIONAL MATCH (n:Person {name: 'Nobody'}) RETURN labels(n)") == (None,)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("toInteger(1.7)", 1),
        ("toInteger(-1.7)", -1),
        ("toInteger('12')", 12),
        ("toInteger('-3.9')", -3),
        ("toInteger('x')", None),
        ("toInteger(true)", 1),
        ("toFloat(3)", 3.0),
        ("toFloat('2.5')", 2.5),
        ("toString(12)", "12"),
        ("toString(true)", "true"),
        ("toBoolean('TRUE')", True),
        ("toBoolean('yes')", None),
        ("toBoolean(0)", False),
        ("substring('hello', 1, 3)", "ell"),
        ("substring('hello', 2)", "llo"),
        ("substring('hello', 0, 0)", ""),
        ("substring('hello', 7)", ""),
        ("log(100) > 4.6 AND log(100) < 4.61", True),
        ("log10(100)", 2.0),
        ("round(2.5)", 3.0),
        ("round(-2.5)", -2.0),
        ("round(-2.6)", -3.0),
        ("round(2.345, 2)", 2.35),
        ("ceil(1)", 1.0),
        ("floor(-1.5)", -2.0),
        ("head([1, 2, 3])", 1),
        ("last([1, 2, 3])", 3),
        ("tail([1, 2, 3])", [2, 3]),
        ("reverse([1, 2, 3])", [3, 2, 1]),
        ("reverse('abc')", "cba"),
        ("split('a,b,c', ',')", ["a", "b", "c"]),
        ("range(1, 3)", [1, 2, 3]),
        ("size('abc')", 3),
        ("toUpper('ab') + toLower('CD')", "ABcd"),
        ("coalesce(null, 2)", 2),
        ("isEmpty([])", True),
        ("7 / 2", 3),
        ("-7 % 2", -1),
        ("2 ^ 3", 8.0),
        ("(1 + 2) * 3", 9),
        ("[x IN range(1, 5) WHERE x % 2 = 1 | x * 10]", [10, 30, 50]),
        ("[x IN [1, 2, 3] | x * x]", [1, 4, 9]),
        ("[x IN [1, 2, 3] WHERE x > 1]", [2, 3]),
        ("all(x IN [1, 2] WHERE x > 0)", True),
        ("any(x IN [1, 2] WHERE x > 1)", True),
        ("none(x IN [1, 2] WHERE x > 1)", False),
        ("single(x IN [1, 2] WHERE x > 1)", True),
        ("{a: 1}['a']", 1),
    ],
)
def test_expressions(path: ReadOnlyQueryPath, expression: str, expected: Any) -> None:
    assert one(path, f"RETURN {expression}") == (expected,)


@pytest.mark.parametrize(
    ("values", "expression", "expected"),
    [
        ([1.7, -1.7, 2.0, -0.5], "toInteger(x)", [1, -1, 2, 0]),
        (["12", "-3.9", "9007199254740993"], "toInteger(x)", [12, -3, 9007199254740993]),
        ([9007199254740993, -4], "toInteger(x)", [9007199254740993, -4]),
        ([True, False], "toString(x)", ["true", "false"]),
        ([7, -8], "toString(x)", ["7", "-8"]),
        (["TRUE", "false", "yes", "1", "t"], "toBoolean(x)", [True, False, None, None, None]),
        ([0, 1, 2], "toBoolean(x)", [False, True, True]),
        ([1, 2], "substring('hello', x, x)", ["e", "ll"]),
        ([-1, 0], "substring('hello', 1, x)", [None, ""]),
    ],
)
def test_expressions_on_runtime_values(
    path: ReadOnlyQueryPath, values: list[Any], expression: str, expected: list[Any]
) -> None:
    assert column(path, f"UNWIND $values AS x RETURN {expression}", values=values) == expected


@pytest.mark.parametrize(
    ("values", "expression"),
    [
        ([1.5], "toString(x)"),  # Ladybug formats 1.5 as '1.500000'
        ([[1, 2]], "reverse(x)"),  # Ladybug reverses the text '[1,2]'
        ([1.5], "toBoolean(x)"),  # an error in Neo4j
    ],
)
def test_divergent_runtime_types_fail_loudly(path: ReadOnlyQueryPath, values: list[Any], expression: str) -> None:
    with pytest.raises(QueryExecutionError):
        path.run(f"UNWIND $values AS x RETURN {expression}", {"values": values})


def test_list_indexes_and_slices_follow_neo4j(path: ReadOnlyQueryPath) -> None:
    """Neo4j lists are 0-based with an exclusive slice end and negative positions from the end —
    Python's semantics — while Ladybug's are 1-based and inclusive."""
    data = [10, 20, 30, 40, 50]
    indexes = [0, 1, 4, -1, -5]
    bounds = [None, 0, 1, 3, 5, 9, -1, -2, -9]
    slices = [(s, e) for s in bounds for e in bounds]

    def text(v: int | None) -> str:
        return "" if v is None else str(v)

    items = [f"l[{i}]" for i in indexes] + [f"l[{text(s)}..{text(e)}]" for s, e in slices]
    got = one(path, f"WITH {data} AS l RETURN " + ", ".join(items))
    expected = [data[i] for i in indexes] + [data[s:e] for s, e in slices]
    assert list(got) == expected
    # positions that are not literals: parameters, same semantics
    got = column(
        path,
        "UNWIND $pairs AS p WITH p, $l AS l RETURN l[p[0]..p[1]]",
        pairs=[[1, 3], [-2, 9], [0, -1], [-9, 2]],
        l=data,
    )
    assert got == [data[1:3], data[-2:9], data[0:-1], data[-9:2]]
    assert column(path, "UNWIND [0, 2, -1] AS i RETURN $l[i]", l=data) == [10, 30, 50]


def test_string_subscript_is_property_access(path: ReadOnlyQueryPath) -> None:
    assert one(path, "MATCH (n:Person {name: 'Bob'}) RETURN n['age']") == (25,)


# -- patterns as expressions ---------------------------------------------------------------------


def test_pattern_predicates_and_count_subqueries(path: ReadOnlyQueryPath) -> None:
    assert column(
        path,
        "MATCH (a:Person) WHERE (a)-[:LIVES_IN]->(:City {name: 'Paris'}) RETURN a.name ORDER BY a.name",
    ) == ["Alice", "Bob"]
    assert column(path, "MATCH (a:Person) WHERE NOT (a)-[:LIVES_IN]->() RETURN a.name ORDER BY a.name") == [
        "Dave",
        "Eve",
    ]
    assert rows(path, "MATCH (a:Person) RETURN a.name, COUNT { (a)-[:KNOWS]->() } AS k ORDER BY a.name") == [
        ("Alice", 3),
        ("Bob", 2),
        ("Carol", 1),
        ("Dave", 0),
        ("Eve", 1),
    ]
    assert column(
        path,
        "MATCH (a:Person) WHERE EXISTS { MATCH (a)-[:KNOWS]->(b) WHERE b.age > 35 } RETURN a.name ORDER BY a.name",
    ) == ["Carol", "Eve"]
    assert column(path, "MATCH (a:Person) WHERE exists(a.tags) RETURN a.name ORDER BY a.name") == [
        "Alice",
        "Bob",
        "Carol",
        "Dave",
    ]


def test_label_predicates_and_alternatives(path: ReadOnlyQueryPath) -> None:
    assert column(path, "MATCH (n) WHERE n:City RETURN n.name ORDER BY n.name") == ["Paris", "Rome"]
    assert column(path, "MATCH (n) WHERE n:City:Person RETURN n.name") == []  # AND: none
    assert column(path, "MATCH (n) WHERE n:City|Person RETURN count(*)") == [7]
    assert column(path, "MATCH (n:City|Person) RETURN count(*)") == [7]


def test_map_projection(path: ReadOnlyQueryPath) -> None:
    assert one(path, "MATCH (a:Person {name: 'Alice'}) RETURN a {.name, .age, x: 1} AS m") == (
        {"name": "Alice", "age": 30, "x": 1},
    )
    assert one(path, "OPTIONAL MATCH (a:Person {name: 'Nobody'}) RETURN a {.name} AS m") == (None,)


def test_comprehensions_over_a_path(path: ReadOnlyQueryPath) -> None:
    got = column(
        path,
        "MATCH p = (:Person {name: 'Alice'})-[:KNOWS*1..3]->(:Person {name: 'Dave'}) "
        "WHERE all(r IN relationships(p) WHERE r.since > 2010) RETURN [n IN nodes(p) | n.name]",
    )
    assert sorted(got) == [["Alice", "Carol", "Dave"], ["Alice", "Eve", "Dave"]]


def test_comprehensions_over_collected_nodes(path: ReadOnlyQueryPath) -> None:
    """Over lists of nodes, Ladybug's own lambdas go wrong from the second row on; the rewrite
    iterates over positions instead."""
    got = rows(
        path,
        "MATCH (a:Person)-[:KNOWS]->(b:Person) WITH a, collect(b) AS bs "
        "RETURN a.name, [x IN bs WHERE x.age > 26 | x.name] AS older, "
        "size([x IN bs WHERE x.age > 26]) AS n, all(x IN bs WHERE x.age > 26) AS every ORDER BY a.name",
    )
    assert [(name, sorted(older), n, every) for name, older, n, every in got] == [
        ("Alice", ["Carol", "Eve"], 2, False),
        ("Bob", ["Alice", "Carol"], 2, True),
        ("Carol", ["Dave"], 1, True),
        ("Eve", ["Dave"], 1, True),
    ]
    got = rows(
        path,
        "MATCH p = (:Person)-[:KNOWS]->(:Person)-[:KNOWS*1..2]->(:Person) "
        "RETURN [n IN nodes(p) | n.name] AS names, [r IN relationships(p) | r.since] AS since",
    )
    by_index = {KNOWS.index(k): k for k in KNOWS}
    expected = sorted(
        ([NAMES[by_index[t[0]][0]]] + [NAMES[by_index[i][1]] for i in t], [by_index[i][2] for i in t])
        for t in trails(None, 2, 3)
    )
    assert sorted((names, since) for names, since in got) == expected


# -- columns ---------------------------------------------------------------------------------


def test_return_columns_are_named_like_neo4j(path: ReadOnlyQueryPath) -> None:
    result = path.run("MATCH (n:Person)-[r:KNOWS]->(m) RETURN n.name, type(r), count(*) AS c, m")
    assert result.columns == ("n.name", "type(r)", "c", "m")


def test_return_star_is_expanded_in_name_order(path: ReadOnlyQueryPath) -> None:
    result = path.run("MATCH (b:Person {name: 'Bob'})-[r:KNOWS]->(a:Person {name: 'Carol'}) RETURN *")
    assert result.columns == ("a", "b", "r")
    text = path.prepare("MATCH (x)-[:KNOWS]->(y)<-[:KNOWS]-(z) RETURN *")
    assert "RETURN x AS x, y AS y, z AS z" in text  # generated variables stay hidden


def test_neo4j_dialect_only_aliases() -> None:
    parsed = parse_query("MATCH (a)-[r:KNOWS]->(b) RETURN type(r), a.name AS n, [1, 2][0]")
    assert to_neo4j(parsed) == (
        "MATCH (a)-[r:KNOWS]->(b) RETURN type(r) AS `type(r)`, a.name AS n, [1, 2][0] AS `[1, 2][0]`"
    )
    assert "label(r)" in to_ladybug(parsed) and "[1, 2][1]" in to_ladybug(parsed)


# -- refusals ---------------------------------------------------------------------------------

REFUSED: list[tuple[str, str]] = [
    ("MATCH (n:Person:City) RETURN n", "multi-label"),
    ("MATCH (a) RETURN size((a)-[:KNOWS]->())", "size() of a pattern"),
    ("MATCH (a) WHERE size((a)-->()) > 1 RETURN a", "size() of a pattern"),
    ("MATCH (a) RETURN [(a)-[:KNOWS]->(b) | b.name]", "pattern comprehension"),
    ("MATCH (a) RETURN a {.*}", ".*"),
    ("MATCH (a) RETURN keys(a)", "keys()"),
    ("MATCH (a) RETURN properties(a)", "properties()"),
    ("RETURN reduce(s = 0, x IN [1, 2] | s + x)", "reduce()"),
    ("RETURN exp(1)", "exp()"),
    ("RETURN percentileCont(1, 0.5)", "percentileCont()"),
    ("RETURN substring('abc', 0, -1)", "negative length"),
    ("RETURN substring('abc', -1)", "negative start"),
    ("MATCH (a)-[:KNOWS*]->(b) RETURN b", "upper bound"),
    ("MATCH (a)-[:KNOWS*2..]->(b) RETURN b", "upper bound"),
    ("MATCH (a)-[:KNOWS*1..40]->(b) RETURN b", "maximum"),
    ("MATCH p = shortestPath((a)-[:KNOWS*2..5]->(b)) RETURN p", "lower bound"),
    ("MATCH (c)-[:LIVES_IN]->(x), p = shortestPath((a)-[:KNOWS*]->(b)) RETURN p", "only relationship"),
    (
        "MATCH p = shortestPath((a)-[:KNOWS*]->(b)) WHERE all(r IN relationships(p) WHERE r.since > 1) RETURN p",
        "during the search",
    ),
    ("MATCH (a) RETURN shortestPath((a)-[*]-(a))", "only supported in MATCH"),
    ("MATCH (a), (b) WITH a, b RETURN allShortestPaths((a)-[*]-(b)) AS p", "only supported in MATCH"),
    ("MATCH (a)-[r]->(b), (c)-[r]->(d) RETURN a", "used twice"),
    ("MATCH (a) WHERE EXISTS { MATCH (a)-->(b) RETURN b } RETURN a", "EXISTS"),
    ("MATCH p = (a)-[:KNOWS*1..2]->(b) RETURN [r IN relationships(p) | id(r)]", "properties"),
    ("MATCH (a)-[:KNOWS]->(b) WITH a, collect(b) AS bs RETURN [x IN bs WHERE x <> a]", "properties"),
    ("MATCH (n:Person&City) RETURN n", "label expression"),
    ("RETURN round(1.5, 0, 'HALF_EVEN')", "rounding mode"),
]


@pytest.mark.parametrize(("query", "word"), REFUSED, ids=[q for q, _ in REFUSED])
def test_silent_divergences_are_refused(path: ReadOnlyQueryPath, query: str, word: str) -> None:
    with pytest.raises(DialectError) as info:
        path.prepare(query)
    assert word in str(info.value)


def test_names_are_always_quoted_never_pasted(path: ReadOnlyQueryPath) -> None:
    """Backtick names reach the engine quoted: a name cannot smuggle clauses into the text."""
    evil = "`x) DETACH DELETE n //`"
    for query in [
        f"MATCH (n:Person) RETURN n.name AS {evil}",
        f"MATCH (n:Person) RETURN {{{evil}: 1}} AS m",
        f"MATCH (n:Person) RETURN n {{{evil}: 1}} AS m",
    ]:
        text = path.prepare(query)
        assert evil in text and "DETACH DELETE n //" not in text.replace(evil, "")
        path.run(query)  # runs as a read; nothing is deleted
    assert column(path, "MATCH (n) RETURN count(n)") == [7]
