"""The Cypher feature deriver: hand-checked derivations, invariances, differences, failures."""

from __future__ import annotations

import json
import re
import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.cypher.features import (
    MATCH_FAMILIES,
    RETURN_FAMILIES,
    UNBOUNDED,
    Derivation,
    DerivationError,
    NodeFeature,
    OrderKey,
    PatternFeature,
    PropertyFeature,
    derive,
    features_json,
)
from components.graph.schema import GraphSchema, NodeLabel, RelType, Triple

SCHEMA = GraphSchema.build(
    [
        NodeLabel("Author", {"id": "STRING", "name": "STRING"}),
        NodeLabel("Paper", {"id": "STRING", "title": "STRING", "year": "INT64"}),
        NodeLabel("Venue", {"id": "STRING", "name": "STRING"}),
    ],
    [
        RelType("WROTE", (Triple("Author", "WROTE", "Paper"),)),
        RelType("CITES", (Triple("Paper", "CITES", "Paper"),)),
        RelType("PUBLISHED_IN", (Triple("Paper", "PUBLISHED_IN", "Venue"),)),
        RelType("AFFILIATED", (Triple("Author", "AFFILIATED", "Venue"), Triple("Paper", "AFFILIATED", "Venue"))),
    ],
)


def ok(query: str, schema: GraphSchema | None = None) -> Derivation:
    d = derive(query, schema)
    assert isinstance(d, Derivation), d
    return d


def same(q1: str, q2: str, schema: GraphSchema | None = None) -> None:
    d1, d2 = ok(q1, schema), ok(q2, schema)
    assert d1 == d2
    assert json.dumps(d1.to_json(), sort_keys=True) == json.dumps(d2.to_json(), sort_keys=True)


def W(spec: str, *, hops: tuple[int, int] = (1, 1), directed: bool = True) -> PatternFeature:
    """``W("Author,WROTE,Paper")`` — a pattern feature."""
    src, typ, dst = spec.split(",")
    return PatternFeature(src, typ, dst, hops[0], hops[1], directed)


# -- hand-checked derivations: one per match family ------------------------------------------


def test_one_hop_property() -> None:
    d = ok("MATCH (p:Paper)<-[:WROTE]-(a:Author {name: 'Ada'}) RETURN p.title AS t")
    assert d.patterns == (PatternFeature("Author", "WROTE", "Paper", 1, 1, True),)
    assert d.nodes == (
        NodeFeature("Author", ""),
        NodeFeature("Author", "name"),
        NodeFeature("Paper", ""),
    )
    assert d.returns == ("Paper#1.title",)
    assert d.shape == ("property",) and d.columns == 1
    assert d.properties == (PropertyFeature("Author", "name"), PropertyFeature("Paper", "title"))
    assert (d.distinct, d.order, d.limit, d.skip) == (False, (), None, None)
    assert d.ops == ("filter",)
    assert (d.match_family, d.return_family) == ("one_hop", "property")


def test_multi_hop_distinct_set() -> None:
    d = ok("MATCH (a:Author {name: $name})-[:WROTE]->(p:Paper)-[:CITES]->(q:Paper) RETURN DISTINCT q.title")
    assert Counter(d.patterns) == Counter(
        [PatternFeature("Author", "WROTE", "Paper", 1, 1, True), PatternFeature("Paper", "CITES", "Paper", 1, 1, True)]
    )
    # q is the CITES target: Paper#1 or Paper#2 is decided structurally, not by name
    assert d.returns in (("Paper#1.title",), ("Paper#2.title",))
    assert d.distinct and "distinct" in d.ops
    assert (d.match_family, d.return_family) == ("multi_hop", "distinct_set")


def test_var_length_is_multi_hop() -> None:
    d = ok("MATCH (a:Paper {id: 'p1'})-[:CITES*1..3]->(b:Paper) RETURN count(DISTINCT b)")
    assert d.patterns == (PatternFeature("Paper", "CITES", "Paper", 1, 3, True),)
    assert d.returns[0].startswith("count(DISTINCT Paper#")
    assert d.shape == ("aggregate",)
    assert Counter(d.ops) == Counter(["filter", "var_length", "aggregation", "count", "distinct"])
    assert (d.match_family, d.return_family) == ("multi_hop", "aggregation")
    unbounded = ok("MATCH (a:Paper)-[:CITES*2..]->(b) RETURN b")
    assert unbounded.patterns[0].min_hops == 2 and unbounded.patterns[0].max_hops == UNBOUNDED


def test_intersection() -> None:
    d = ok(
        "MATCH (a:Author {name: 'Ada'})-[:WROTE]->(p:Paper)<-[:WROTE]-(b:Author) WHERE b.name = 'Bob' RETURN p.title"
    )
    assert d.patterns == (W("Author,WROTE,Paper"),) * 2
    assert Counter(d.nodes)[NodeFeature("Author", "name")] == 2
    assert (d.match_family, d.return_family) == ("intersection", "property")
    # a chain with one anchor is multi-hop, not intersection
    chain = ok("MATCH (a:Author {name: 'Ada'})-[:WROTE]->(p:Paper)<-[:WROTE]-(b:Author) RETURN b")
    assert chain.match_family == "multi_hop"


def test_comparison_boolean() -> None:
    d = ok(
        "MATCH (a:Author {name: 'Ada'})-[:WROTE]->(p:Paper) "
        "MATCH (b:Author {name: 'Bob'})-[:WROTE]->(q:Paper) "
        "RETURN count(DISTINCT p) > count(DISTINCT q) AS more"
    )
    assert d.shape == ("boolean",)
    assert (d.match_family, d.return_family) == ("comparison", "boolean")
    assert "comparison" in d.ops
    # two anchored look-ups side by side are a comparison even without an operator
    side = ok("MATCH (a:Author {name: 'A'}), (b:Author {name: 'B'}) RETURN a.name, b.name")
    assert side.match_family == "comparison"
    # a comparison against a constant is only a filter
    const = ok("MATCH (p:Paper) WHERE p.year > 2000 RETURN p.title")
    assert const.match_family == "one_hop" and "comparison" in const.ops


def test_optional_match_aggregation() -> None:
    d = ok("MATCH (a:Author {name: 'Ada'}) OPTIONAL MATCH (a)-[:WROTE]->(p:Paper) RETURN a.name, count(p) AS n")
    assert d.returns == ("Author#1.name", "count(Paper#1)")
    assert d.shape == ("property", "aggregate")
    assert Counter(d.ops) == Counter(["filter", "optional", "aggregation", "count"])
    assert (d.match_family, d.return_family) == ("optional_match", "aggregation")


def test_shortest_path() -> None:
    d = ok("MATCH p = shortestPath((a:Author {name: 'A'})-[:WROTE|CITES*..6]-(b:Author {name: 'B'})) RETURN length(p)")
    assert d.patterns == (PatternFeature("Author", "CITES|WROTE", "Author", 1, 6, False),)
    assert d.returns == ("length(path#1)",)
    assert d.shape == ("expression",)
    assert {"shortest_path", "var_length"} <= set(d.ops)
    assert (d.match_family, d.return_family) == ("shortest_path", "property")


# -- one per return family -------------------------------------------------------------------


def test_ranking() -> None:
    d = ok(
        "MATCH (a:Author)-[:WROTE]->(p:Paper) WITH a, count(p) AS n ORDER BY n DESC LIMIT 3 RETURN a.name AS name, n"
    )
    assert d.returns == ("Author#1.name", "count(Paper#1)")
    assert d.shape == ("property", "aggregate")
    assert d.order == (OrderKey("count(Paper#1)", "DESC"),)
    assert d.limit == 3 and d.skip is None
    assert Counter(d.ops) == Counter(["with", "aggregation", "count", "order", "limit"])
    assert d.return_family == "ranking"
    # same query written with the ORDER BY in the RETURN: same contract and family
    d2 = ok("MATCH (x:Author)-[:WROTE]->(y:Paper) RETURN x.name, count(y) AS c ORDER BY c DESC LIMIT 3")
    assert (d2.returns, d2.order, d2.limit, d2.return_family) == (d.returns, d.order, d.limit, d.return_family)


def test_boolean_exists_and_count_comparison() -> None:
    d = ok("MATCH (a:Author {name: 'A'}) RETURN EXISTS { (a)-[:WROTE]->(:Paper) } AS wrote")
    assert d.shape == ("boolean",) and d.return_family == "boolean"
    assert PatternFeature("Author", "WROTE", "Paper", 1, 1, True) in d.patterns
    assert "exists" in d.ops
    c = ok("MATCH (a:Author {name: 'A'})-[:WROTE]->(p:Paper) RETURN count(p) > 0")
    assert (c.shape, c.return_family) == (("boolean",), "boolean")


def test_skip_limit_parameters_and_literal_kinds() -> None:
    d = ok("MATCH (p:Paper) RETURN p, 1, 'x', $v, [p.id], p.year + 1 ORDER BY p.year SKIP $s LIMIT $n")
    assert d.shape == ("node", "literal", "literal", "literal", "list", "expression")
    assert (d.skip, d.limit) == ("$s", "$n")
    assert d.order == (OrderKey("Paper#1.year", "ASC"),)
    assert "arithmetic" in d.ops


def test_ops_catalogue() -> None:
    d = ok(
        "MATCH (a:Author)-[r:WROTE]->(p:Paper) "
        "WHERE NOT a.name STARTS WITH 'X' AND p.year IN [2000, 2001] AND a.id <> 'z' "
        "AND (p.title CONTAINS 'graph' OR p.title =~ '.*net.*') AND p.id IS NOT NULL "
        "UNWIND [1, 2] AS k "
        "RETURN CASE WHEN k > 1 THEN a.name ELSE p.title END, r"
    )
    ops = Counter(d.ops)
    assert ops["filter"] == 5
    assert ops["string_op"] == 3 and ops["negation"] == 2 and ops["list_op"] == 2
    assert ops["disjunction"] == 1 and ops["null_check"] == 1 and ops["case"] == 1
    assert ops["comparison"] == 1
    assert d.shape == ("expression", "relationship")
    assert d.returns[1] == "[WROTE]#1"


def test_union() -> None:
    d = ok("MATCH (a:Author) RETURN a.name AS n UNION MATCH (v:Venue) RETURN v.name AS n")
    assert d.returns == ("Author#1.name | Venue#1.name",)
    assert Counter(d.ops) == Counter(["union", "distinct"])
    same(
        "MATCH (a:Author) RETURN a.name AS n UNION ALL MATCH (v:Venue) RETURN v.name AS n",
        "MATCH (x:Venue) RETURN x.name AS n UNION ALL MATCH (y:Author) RETURN y.name AS n",
    )


def test_families_are_from_the_spec() -> None:
    queries = [
        "MATCH (n:Paper) RETURN n.title",
        "MATCH (a)-[:X]->(b)-[:Y]->(c) RETURN c",
        "MATCH (a:A)-[:R]->(b) RETURN DISTINCT b",
    ]
    for q in queries:
        d = ok(q)
        assert d.match_family in MATCH_FAMILIES and d.return_family in RETURN_FAMILIES


# -- invariances -----------------------------------------------------------------------------


def test_alias_and_variable_names_do_not_matter() -> None:
    same("MATCH (p:Paper) RETURN p.title AS t", "MATCH (x:Paper) RETURN x.title")
    same(
        "MATCH (p:Paper) RETURN p.title AS t ORDER BY t DESC",
        "MATCH (q:Paper) RETURN q.title ORDER BY q.title DESC",
    )
    piped = ok("MATCH (a:Author)-[:WROTE]->(p) WITH a, count(p) AS c RETURN a.name, c")
    direct = ok("MATCH (z:Author)-[:WROTE]->(w) RETURN z.name, COUNT(w)")
    assert piped.returns == direct.returns == ("Author#1.name", "count(*#1)")
    assert piped.shape == direct.shape == ("property", "aggregate")
    assert Counter(piped.ops) - Counter(direct.ops) == Counter(["with"])  # the stage is an op


def test_direction_writing_does_not_matter() -> None:
    same(
        "MATCH (a:Author)-[:WROTE]->(p:Paper)<-[:WROTE]-(b:Author) RETURN p",
        "MATCH (b:Author)-[:WROTE]->(p:Paper)<-[:WROTE]-(a:Author) RETURN p",
    )
    same(
        "MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN p.title",
        "MATCH (p:Paper)<-[:WROTE]-(a:Author) RETURN p.title",
    )
    same("MATCH (a:Paper)-[:CITES]-(b:Venue) RETURN 1", "MATCH (b:Venue)-[:CITES]-(a:Paper) RETURN 1")
    same(
        "MATCH (a:Author) WHERE EXISTS { (a)-[:WROTE]->(:Paper) } RETURN a",
        "MATCH (a:Author) WHERE EXISTS { (:Paper)<-[:WROTE]-(a) } RETURN a",
    )


def test_clause_pattern_and_predicate_order_do_not_matter() -> None:
    same(
        "MATCH (a:Author {name: 'A'})-[:WROTE]->(p:Paper) MATCH (p)-[:PUBLISHED_IN]->(v:Venue) "
        "WHERE v.name = 'X' AND p.year > 2000 RETURN p.title, v.name",
        "MATCH (p:Paper)-[:PUBLISHED_IN]->(v:Venue), (a:Author {name: 'A'})-[:WROTE]->(p) "
        "WHERE p.year > 2000 AND v.name = 'X' RETURN p.title, v.name",
    )
    # symmetric variables separated only by what is returned
    same(
        "MATCH (a:Author), (b:Author) RETURN a.name, b.id",
        "MATCH (y:Author), (x:Author) RETURN x.name, y.id",
    )


def test_inline_map_equals_where_equality_and_label_predicate() -> None:
    d1 = ok("MATCH (p:Paper {year: 2020}) RETURN p.title")
    d2 = ok("MATCH (p) WHERE p.year = 2020 AND p:Paper RETURN p.title")
    assert d1 == d2


def test_identical_queries_are_equal_and_cached() -> None:
    q = "MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN a.name"
    assert derive(q) == derive(q)
    assert derive(q) is derive(q)
    assert derive(q, SCHEMA) is derive(q, SCHEMA)
    assert hash(derive(q)) == hash(derive(q))


# -- differences -----------------------------------------------------------------------------


def test_structural_differences_change_the_derivation() -> None:
    base = ok("MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN p.title")
    reversed_ = ok("MATCH (a:Author)<-[:WROTE]-(p:Paper) RETURN p.title")
    assert base.patterns != reversed_.patterns
    limited = ok("MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN p.title LIMIT 5")
    assert "limit" in limited.ops and "limit" not in base.ops and limited.limit == 5
    other_prop = ok("MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN p.year")
    assert other_prop.returns != base.returns and other_prop.properties != base.properties
    undirected = ok("MATCH (a:Author)-[:WROTE]-(p:Paper) RETURN p.title")
    assert undirected.patterns == (PatternFeature("Author", "WROTE", "Paper", 1, 1, False),)
    assert undirected != base
    counted = ok("MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN count(p)")
    assert counted.return_family == "aggregation" and counted != base


def test_symmetric_roles_are_told_apart() -> None:
    # returning the citing vs the cited paper is a different query
    citing = ok("MATCH (a:Paper)-[:CITES]->(b:Paper {id: 'x'}) RETURN a.title")
    cited = ok("MATCH (a:Paper)-[:CITES]->(b:Paper {id: 'x'}) RETURN b.title")
    assert citing.returns != cited.returns


# -- endpoint resolution ---------------------------------------------------------------------


def test_unlabelled_endpoints_from_other_patterns_and_where() -> None:
    d = ok("MATCH (a)-[:WROTE]->(p) MATCH (a:Author) WHERE p:Paper RETURN p.title")
    assert d.patterns == (PatternFeature("Author", "WROTE", "Paper", 1, 1, True),)
    assert d.returns == ("Paper#1.title",)


def test_unlabelled_endpoints_from_schema() -> None:
    q = "MATCH (a {name: 'Ada'})-[:WROTE]->(p)-[:PUBLISHED_IN]->(v) RETURN v.name"
    bare = ok(q)
    assert {f.source for f in bare.patterns} == {"*"}
    d = ok(q, SCHEMA)
    assert Counter(d.patterns) == Counter(
        [
            PatternFeature("Author", "WROTE", "Paper", 1, 1, True),
            PatternFeature("Paper", "PUBLISHED_IN", "Venue", 1, 1, True),
        ]
    )
    assert d.returns == ("Venue#1.name",)
    assert PropertyFeature("Author", "name") in d.properties
    assert d == ok("MATCH (v:Venue)<-[:PUBLISHED_IN]-(p:Paper)<-[:WROTE]-(a:Author {name: 'Ada'}) RETURN v.name")
    # undirected CITES: Paper on both sides
    und = ok("MATCH (x)-[:CITES]-(y) RETURN y", SCHEMA)
    assert und.patterns == (PatternFeature("Paper", "CITES", "Paper", 1, 1, False),)
    # AFFILIATED has two possible sources: not unique, stays *
    amb = ok("MATCH (x)-[:AFFILIATED]->(v) RETURN x", SCHEMA)
    assert amb.patterns == (PatternFeature("*", "AFFILIATED", "Venue", 1, 1, True),)
    # an explicit label wins over the schema
    exp = ok("MATCH (x:Paper)-[:AFFILIATED]->(v) RETURN x", SCHEMA)
    assert exp.patterns == (PatternFeature("Paper", "AFFILIATED", "Venue", 1, 1, True),)


def test_schema_fingerprint_is_by_content() -> None:
    copy = GraphSchema.from_json(SCHEMA.dumps())
    q = "MATCH (a)-[:WROTE]->(p) RETURN p"
    assert derive(q, copy) == derive(q, SCHEMA) != derive(q)


# -- failures --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("", "empty_query"),
        ("   \n ", "empty_query"),
        ("// only a comment", "empty_query"),
        ("MATCH (n RETURN n", "syntax_error"),
        ("hello world", "syntax_error"),
        ("MATCH (n) RETURN n; MATCH (m) RETURN m", "unsafe_query"),
        ("CREATE (n:Paper) RETURN n", "unsupported"),
        ("MATCH (n) SET n.x = 1 RETURN n", "unsupported"),
        ("CALL db.labels() YIELD label RETURN label", "unsupported"),
        ("MATCH (n:Paper)", "unsupported"),
    ],
)
def test_failed_derivations_are_explicit(query: str, code: str) -> None:
    d = derive(query)
    assert isinstance(d, DerivationError) and not d.ok
    assert d.code == code and d.message
    assert features_json(query) == {"ok": False, "code": code, "message": d.message}


def test_non_string_input() -> None:
    d = derive(None)  # type: ignore[arg-type]
    assert isinstance(d, DerivationError) and d.code == "syntax_error"


@given(st.text(max_size=40))
@settings(max_examples=150, deadline=None)
def test_garbage_never_crashes_or_fakes_success(text: str) -> None:
    d = derive(text)
    if isinstance(d, Derivation):
        assert d.shape and len(d.returns) == d.columns  # a success always has a RETURN
    else:
        assert d.code in {"empty_query", "syntax_error", "unsafe_query", "dialect_divergence", "unsupported"}


def test_json_round_trip() -> None:
    j = features_json("MATCH (a:Author)-[:WROTE*2]->(p) RETURN a.name ORDER BY a.name LIMIT 2", SCHEMA)
    assert j["ok"] and json.loads(json.dumps(j)) == j
    assert j["patterns"] == [["Author", "WROTE", "Paper", 2, 2, True]]
    assert j["shape"] == {"columns": 1, "kinds": ["property"]}
    assert j["order"] == [["Author#1.name", "ASC"]] and j["limit"] == 2


# -- property-based invariance ---------------------------------------------------------------

_KEYWORDS = {
    "as",
    "by",
    "in",
    "is",
    "on",
    "or",
    "and",
    "not",
    "xor",
    "end",
    "case",
    "when",
    "then",
    "else",
    "null",
    "true",
    "false",
    "match",
    "return",
    "where",
    "with",
    "order",
    "limit",
    "skip",
    "asc",
    "desc",
    "all",
    "any",
    "none",
    "single",
    "union",
    "unwind",
    "optional",
    "distinct",
    "exists",
    "count",
    "contains",
    "starts",
    "ends",
    "call",
    "yield",
    "set",
    "create",
    "delete",
    "merge",
    "remove",
    "detach",
    "filter",
    "extract",
    "reduce",
    "shortestpath",
    "allshortestpaths",
    "ascending",
    "descending",
    "for",
    "use",
    "let",
    "next",
    "finish",
    "insert",
    "search",
    "group",
    "shortest",
}

names = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(lambda s: s not in _KEYWORDS)

#: Templates over the variables {a}, {b}, {c}, {d}, {r}.
TEMPLATES = [
    (
        "MATCH ({a}:Author {{name: 'A'}})-[:WROTE]->({b}:Paper)<-[:WROTE]-({c}:Author) "
        "WHERE {c}.name = 'B' RETURN {b}.title AS {d}"
    ),
    (
        "MATCH ({a}:Author)-[{r}:WROTE]->({b}:Paper) WITH {a}, count({b}) AS {d} "
        "ORDER BY {d} DESC LIMIT 5 RETURN {a}.name, {d}"
    ),
    ("MATCH ({a}:Paper)-[:CITES]->({b}:Paper)-[:CITES]->({c}:Paper) RETURN {a}.title, {c}.title ORDER BY {c}.year"),
    ("MATCH ({a}:Author), ({b}:Author) WHERE {a}.name = 'X' AND {b}.name = 'Y' RETURN {a}.id < {b}.id AS {d}"),
    (
        "MATCH ({a}:Author {{name: 'A'}}) OPTIONAL MATCH ({a})-[{r}:WROTE]->({b}) "
        "RETURN {a}.name, collect(DISTINCT {b}.title) AS {d}"
    ),
    (
        "MATCH {d} = shortestPath(({a}:Author {{id: 1}})-[*..4]-({b}:Author {{id: 2}})) "
        "RETURN [{c} IN nodes({d}) | {c}.id] AS ids"
    ),
    ("MATCH ({a}:Paper) WHERE EXISTS {{ ({a})<-[:WROTE]-({b}:Author) }} UNWIND [1, 2] AS {c} RETURN {a}.title, {c}"),
    "MATCH ({a})-[:WROTE]->({b}) MATCH ({c})-[:WROTE]->({b}) RETURN {a}, {c}, {b}",
]


@given(
    st.sampled_from(TEMPLATES),
    st.lists(names, min_size=5, max_size=5, unique=True),
    st.lists(names, min_size=5, max_size=5, unique=True),
)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_renaming_variables_never_changes_the_derivation(template: str, first: list[str], second: list[str]) -> None:
    keys = ["a", "b", "c", "d", "r"]
    q1 = template.format(**dict(zip(keys, first, strict=True)))
    q2 = template.format(**dict(zip(keys, second, strict=True)))
    same(q1, q2)
    same(q1, q1.replace("count(", "COUNT("), SCHEMA)


# a random pattern graph: edges between variables 0..4 with labels/types, written in random
# order, with random direction writing, and an AND of random predicates in random order
LABELS = ["Author", "Paper", "Venue"]
TYPES = ["WROTE", "CITES", "PUBLISHED_IN"]

edge = st.tuples(st.integers(0, 4), st.sampled_from(TYPES), st.integers(0, 4), st.booleans()).filter(
    lambda e: e[0] != e[2]
)


@st.composite
def pattern_queries(draw: st.DrawFn) -> tuple[list[str], list[str], list[str], str]:
    edges = draw(st.lists(edge, min_size=1, max_size=4))
    used = sorted({e[0] for e in edges} | {e[2] for e in edges})
    labels = {v: draw(st.sampled_from(LABELS)) for v in used}
    patterns = []
    for src, typ, dst, flip in edges:
        s = f"(v{src}:{labels[src]})"
        t = f"(v{dst}:{labels[dst]})"
        patterns.append(f"{t}<-[:{typ}]-{s}" if flip else f"{s}-[:{typ}]->{t}")
    preds = draw(
        st.lists(
            st.sampled_from(
                [
                    f"v{used[0]}.name = 'x'",
                    f"v{used[-1]}.year > 2000",
                    f"v{used[0]}.id IN [1, 2]",
                    f"NOT v{used[-1]}.title CONTAINS 'q'",
                ]
            ),
            unique=True,
            max_size=3,
        )
    )
    ret = f"RETURN v{used[-1]}.name, count(v{used[0]}) AS n ORDER BY n DESC LIMIT 3"
    return patterns, preds, used, ret


def _write(patterns: list[str], preds: list[str], ret: str, split: bool) -> str:
    body = " ".join(f"MATCH {p}" for p in patterns) if split else "MATCH " + ", ".join(patterns)
    where = f" WHERE {' AND '.join(preds)}" if preds else ""
    return body + where + " " + ret


def _flip(pattern: str) -> str:
    m = re.fullmatch(r"(\(.*?\))(<-\[.*?\]-|-\[.*?\]->)(\(.*?\))", pattern)
    assert m
    left, rel, right = m.groups()
    rel = "-" + rel[2:] + ">" if rel.startswith("<-") else "<" + rel[:-1]
    return f"{right}{rel}{left}"


@given(pattern_queries(), st.randoms(use_true_random=False), st.booleans(), st.booleans())
@settings(max_examples=100, deadline=None)
def test_reordering_and_direction_writing_never_change_the_derivation(
    query: tuple[list[str], list[str], list[str], str], rnd, split1: bool, split2: bool
) -> None:
    patterns, preds, _used, ret = query
    q1 = _write(patterns, preds, ret, split1)
    shuffled = [(_flip(p) if rnd.random() < 0.5 else p) for p in patterns]
    rnd.shuffle(shuffled)
    preds2 = list(preds)
    rnd.shuffle(preds2)
    q2 = _write(shuffled, preds2, ret, split2)
    d1, d2 = ok(q1), ok(q2)
    assert d1 == d2, (q1, q2)
    # and renaming v<i> -> w<perm(i)> on top
    perm = list(range(5))
    rnd.shuffle(perm)
    q3 = re.sub(r"\bv(\d)\b", lambda m: f"w{perm[int(m.group(1))]}", q2)
    assert ok(q3) == d1, (q1, q3)


def test_a_derivation_on_a_cache_miss_is_fast() -> None:
    from components.cypher.features import _derive

    q = (
        "MATCH (a:Author {name: 'A'})-[:WROTE]->(p:Paper)<-[:WROTE]-(b:Author) "
        "WHERE b.name = 'B' AND p.year > 2000 RETURN p.title ORDER BY p.year DESC LIMIT 5"
    )
    ok(q)  # parse cache warm
    start = time.perf_counter()
    for _ in range(50):
        _derive.__wrapped__(q, ())
    per_query = (time.perf_counter() - start) / 50
    assert per_query < 0.005  # ~1 ms typical; generous bound for slow CI machines
