"""The evidence rubric on the real deriver and parser: invariances, bounds, matching, pooling."""

from __future__ import annotations

import doctest
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.cypher.features import derive
from components.rubric import evidence, metrics, rewards
from components.rubric.evidence import (
    multiset_f1,
    pair_parts,
    s_aggregate,
    s_align,
    s_evidence,
    s_pair,
    score_evidence,
)

Q1 = "MATCH (a:Author {name: $n})-[:WROTE]->(p:Paper) RETURN p.title AS title ORDER BY title LIMIT 5"
Q2 = "MATCH (p:Paper)-[:PUBLISHED_IN]->(v:Venue) WHERE v.name = $v RETURN count(DISTINCT p) AS n"
Q3 = "MATCH (p:Paper {id: $id})<-[:CITES]-(c:Paper) RETURN DISTINCT c.title"
Q4 = "MATCH (v:Venue) RETURN v.name"


@pytest.mark.parametrize("module", [evidence, metrics, rewards])
def test_docstring_examples(module) -> None:
    failures, tried = doctest.testmod(module)
    assert tried > 0 and failures == 0


def test_identical_queries_score_one_and_failures_zero() -> None:
    for q in (Q1, Q2, Q3, Q4):
        assert s_pair(q, q) == pytest.approx(1.0)
    assert s_pair(Q1, "MATCH (n) DELETE n") == 0.0  # unsafe: a failed derivation
    assert s_pair("", Q1) == 0.0
    assert s_pair(Q1, "RETURN (") == 0.0


def test_disjoint_queries_score_zero() -> None:
    """Nothing in common — no pattern, node, return, property, op or family — scores 0."""
    a = "MATCH (a:Author)-[:WROTE]->(p:Paper)-[:CITES]->(q:Paper) WHERE a.h_index > 3 RETURN count(q) AS n"
    b = "MATCH (v:Venue) RETURN DISTINCT v.name ORDER BY v.name"
    da, db = derive(a), derive(b)
    assert da.ok and db.ok
    assert set(da.returns).isdisjoint(db.returns) and set(da.ops).isdisjoint(db.ops)
    assert (da.match_family, da.return_family) == ("multi_hop", "aggregation")
    assert (db.match_family, db.return_family) == ("one_hop", "ranking") or db.return_family != "aggregation"
    parts = pair_parts(da, db)
    assert parts["contract"] == 0.0 and parts["shape"] == 0.0 and parts["ops"] == 0.0 and parts["family"] == 0.0
    assert s_pair(a, b) == 0.0


def test_surface_rewrites_keep_s_pair() -> None:
    variants = [
        "MATCH (x:Paper)<-[:WROTE]-(y:Author {name: $n}) RETURN x.title ORDER BY x.title LIMIT 5",
        "MATCH (y:Author)-[:WROTE]->(x:Paper) WHERE y.name = $n RETURN x.title AS t ORDER BY t LIMIT 5",
    ]
    for v in variants:
        assert s_pair(Q1, v) == pytest.approx(1.0), v


def test_partial_overlap_is_between_and_sub_weights_are_exact() -> None:
    """Q1 with its LIMIT dropped differs only in ops (limit) and return family (ranking →
    property): S_pair = 0.55 + 0.25·(0.45 + 0.2 + 0.15 + 0.1 + 0.1) + 0.15·F1 + 0.05·0.5."""
    no_limit = Q1.replace(" LIMIT 5", "")
    d1, d2 = derive(Q1), derive(no_limit)
    ops_f1 = multiset_f1(d1.ops, d2.ops)
    expected = 0.55 * 1 + 0.25 * 1 + 0.15 * ops_f1 + 0.05 * 0.5
    assert 0 < ops_f1 < 1
    assert s_pair(Q1, no_limit) == pytest.approx(expected)


def test_multiset_f1_counts_repeats() -> None:
    assert multiset_f1(["a", "a"], ["a"]) == pytest.approx(2 / 3)
    assert multiset_f1(["a"], ["a"]) == 1.0
    assert multiset_f1([], ["a"]) == 0.0


def test_align_matches_one_to_one_and_divides_by_the_larger_side() -> None:
    assert s_align([Q1, Q2], [Q2, Q1]) == pytest.approx(1.0)  # order does not matter
    assert s_align([Q1, Q2], [Q1]) == pytest.approx(0.5)  # a missing query halves it
    assert s_align([Q1], [Q1, Q1, Q1]) == pytest.approx(1 / 3)  # padding is penalised
    assert s_align([], [Q1]) == 0.0 and s_align([Q1], []) == 0.0
    # the matching is the best one, not greedy: Q1 could pair with either, Q3 only with Q1'
    m = score_evidence([Q1, Q3], [Q3, Q1]).matrix
    assert m[0][1] == pytest.approx(1.0) and m[1][0] == pytest.approx(1.0)


def test_aggregate_credits_a_split_decomposition() -> None:
    """One query split into two covers the same pooled features better than S_align says."""
    joined = ["MATCH (a:Author {name: $n})-[:WROTE]->(p:Paper)-[:PUBLISHED_IN]->(v:Venue) RETURN v.name"]
    split = [
        "MATCH (a:Author {name: $n})-[:WROTE]->(p:Paper) RETURN p.id",
        "MATCH (p:Paper {id: $id})-[:PUBLISHED_IN]->(v:Venue) RETURN v.name",
    ]
    assert s_aggregate(joined, split) > s_align(joined, split)
    score = score_evidence(joined, split)
    assert score.s_evidence == pytest.approx(0.7 * score.s_align + 0.3 * score.s_aggregate)


def test_evidence_empty_side_is_zero_and_failures_are_reported() -> None:
    assert s_evidence([], []) == 0.0 and s_evidence([Q1], []) == 0.0
    score = score_evidence([Q1, "nonsense"], [Q1])
    assert score.failed == (1, 0)
    out = score.to_json()
    assert out["m"] == 2 and out["n"] == 1 and out["failed_derivations"] == {"gold": 1, "pred": 0}
    assert out["s_pair"]["best_per_gold"] == [pytest.approx(1.0), 0.0]


# -- property tests (hypothesis) ----------------------------------------------------------------

LABELS = ["Author", "Paper", "Venue"]
TRIPLES = [("Author", "WROTE", "Paper"), ("Paper", "CITES", "Paper"), ("Paper", "PUBLISHED_IN", "Venue")]
NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6).map(lambda s: f"v_{s}")


@st.composite
def two_hop(draw):
    """A two-pattern query over the demo schema, with the names of its variables."""
    t1 = draw(st.sampled_from(TRIPLES))
    t2 = draw(st.sampled_from([t for t in TRIPLES if t[0] == t1[2] or t[2] == t1[2]]))
    names = draw(st.lists(NAMES, min_size=3, max_size=3, unique=True))
    agg = draw(st.booleans())
    return t1, t2, names, agg


def _render(t1, t2, names, agg, swap: bool) -> str:
    a, b, c = names
    first = f"({a}:{t1[0]})-[:{t1[1]}]->({b}:{t1[2]})"
    if t2[0] == t1[2]:
        second = f"({b})-[:{t2[1]}]->({c}:{t2[2]})"
    else:
        second = f"({c}:{t2[0]})-[:{t2[1]}]->({b})"
    matches = [f"MATCH {first}", f"MATCH {second}"]
    if swap:
        matches.reverse()
    ret = f"RETURN count({c}) AS n" if agg else f"RETURN {c}.id AS out"
    return " ".join(matches) + f" WHERE {a}.id = $x " + ret


@settings(max_examples=40, deadline=None)
@given(two_hop(), st.lists(NAMES, min_size=3, max_size=3, unique=True), st.booleans())
def test_renaming_and_reordering_leave_s_pair_unchanged(q, other_names, swap) -> None:
    t1, t2, names, agg = q
    original = _render(t1, t2, names, agg, swap=False)
    variant = _render(t1, t2, other_names, agg, swap=swap)
    assert derive(original).ok, original
    assert s_pair(original, variant) == pytest.approx(1.0), (original, variant)


@settings(max_examples=40, deadline=None)
@given(st.lists(two_hop(), min_size=1, max_size=3), st.lists(two_hop(), min_size=0, max_size=3))
def test_scores_stay_in_the_unit_interval(gold, pred) -> None:
    g = [_render(*q, swap=False) for q in gold]
    p = [_render(*q, swap=True) for q in pred]
    score = score_evidence(g, p)
    for value in (score.s_align, score.s_aggregate, score.s_evidence, *[x for row in score.matrix for x in row]):
        assert 0.0 <= value <= 1.0 + 1e-12
    assert s_evidence(g, g) == pytest.approx(1.0)


def test_random_schema_queries_against_each_other_are_bounded() -> None:
    rng = random.Random(0)
    queries = [Q1, Q2, Q3, Q4, "MATCH (n:Paper) RETURN count(n)", "MATCH (a:Author) RETURN a.name LIMIT 3"]
    for _ in range(50):
        g, p = rng.sample(queries, 2)
        assert 0.0 <= s_pair(g, p) <= 1.0
        assert s_pair(g, p) == pytest.approx(s_pair(p, g))  # symmetric
