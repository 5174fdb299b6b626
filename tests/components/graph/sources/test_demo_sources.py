from __future__ import annotations

from collections import Counter

import pytest

from components.graph.errors import ImportFormatError
from components.graph.model import GraphData, infer_property_type
from components.graph.sources.demo import (
    DEFAULT_SCALE,
    DEMO_DOMAINS,
    generate,
    scale_for_edges,
)

# (source label, type, target label) triples each domain must have, and nothing else
TRIPLES = {
    "academic": {
        ("Author", "WROTE", "Paper"),
        ("Paper", "CITES", "Paper"),
        ("Paper", "PUBLISHED_IN", "Venue"),
    },
    "ecommerce": {
        ("Item", "MADE_BY", "Brand"),
        ("Item", "ALSO_BOUGHT", "Item"),
        ("Item", "ALSO_VIEWED", "Item"),
        ("Item", "BOUGHT_TOGETHER", "Item"),
    },
    "biomedical": {
        ("Compound", "TREATS", "Disease"),
        ("Disease", "ASSOCIATES", "Gene"),
        ("Disease", "PRESENTS", "Symptom"),
        ("Compound", "BINDS", "Gene"),
        ("Gene", "INTERACTS_WITH", "Gene"),
    },
}
SYMMETRIC = {"BOUGHT_TOGETHER", "INTERACTS_WITH"}
NAME_KEY = {"Paper": "title", "Item": "title", "Gene": "symbol"}

_cache: dict[tuple[str, int, int], GraphData] = {}


def small(domain: str, seed: int = 0, scale: int = 400) -> GraphData:
    key = (domain, seed, scale)
    if key not in _cache:
        _cache[key] = generate(domain, seed=seed, scale=scale)
    return _cache[key]


@pytest.mark.parametrize("domain", DEMO_DOMAINS)
def test_same_seed_gives_identical_data_and_another_seed_does_not(domain: str) -> None:
    a = small(domain, seed=5)
    assert generate(domain, seed=5, scale=400) == a
    assert repr(generate(domain, seed=5, scale=400)) == repr(a)  # byte-identical rendering
    b = small(domain, seed=6)
    assert b != a
    assert {r["id"] for ns in a.nodes.values() for r in ns.rows} == {
        r["id"] for ns in b.nodes.values() for r in ns.rows
    }  # same ids, different content and wiring


@pytest.mark.parametrize("domain", DEMO_DOMAINS)
def test_default_scale_is_a_small_cpu_graph(domain: str) -> None:
    g = generate(domain)
    assert g.node_count == DEFAULT_SCALE
    assert 5_000 <= g.rel_count <= 15_000


@pytest.mark.parametrize("domain", DEMO_DOMAINS)
def test_scale_controls_size(domain: str) -> None:
    a, b = small(domain, scale=400), small(domain, scale=1200)
    assert a.node_count == 400 and b.node_count == 1200
    assert 2.5 * a.rel_count < b.rel_count < 3.5 * a.rel_count
    for label in a.nodes:
        assert len(a.nodes[label].rows) <= len(b.nodes[label].rows)


@pytest.mark.parametrize("domain", DEMO_DOMAINS)
def test_scale_for_edges_reaches_the_requested_count(domain: str) -> None:
    scale = scale_for_edges(domain, 20_000)
    assert generate(domain, seed=1, scale=scale).rel_count >= 20_000
    assert scale_for_edges(domain, 1_000_000) > 50 * scale_for_edges(domain, 10_000)


@pytest.mark.parametrize("domain", DEMO_DOMAINS)
def test_schema_endpoints_and_no_duplicate_edges(domain: str) -> None:
    g = small(domain)
    ids = {label: {r["id"] for r in ns.rows} for label, ns in g.nodes.items()}
    triples = set()
    for rtype, rs in g.rels.items():
        pairs = Counter()
        for rel in rs.rows:
            triples.add((rel.src_label, rtype, rel.dst_label))
            assert rel.src_id in ids[rel.src_label] and rel.dst_id in ids[rel.dst_label]
            assert (rel.src_label, rel.src_id) != (rel.dst_label, rel.dst_id), "self-loop"
            key = frozenset((rel.src_id, rel.dst_id)) if rtype in SYMMETRIC else (rel.src_id, rel.dst_id)
            pairs[key] += 1
        assert max(pairs.values()) == 1, f"duplicate {rtype} edge"
    assert triples == TRIPLES[domain]


@pytest.mark.parametrize("domain", DEMO_DOMAINS)
def test_declared_property_types_match_the_values(domain: str) -> None:
    g = small(domain)
    for store in (*g.nodes.values(), *g.rels.values()):
        rows = [r if isinstance(r, dict) else r.properties for r in store.rows]
        for name, declared in store.properties.items():
            assert infer_property_type(r.get(name) for r in rows) == declared, name
            assert all(r.get(name) is not None for r in rows), f"{name} has nulls"


@pytest.mark.parametrize("domain", DEMO_DOMAINS)
def test_names_are_unique_text_and_degrees_are_skewed(domain: str) -> None:
    g = small(domain, scale=1200)
    for label, ns in g.nodes.items():
        key = NAME_KEY.get(label, "name")
        names = [r[key] for r in ns.rows]
        assert len(set(names)) == len(names), label
        assert all(isinstance(n, str) and len(n) >= 3 for n in names)
    biggest = max(g.rels.values(), key=lambda rs: len(rs.rows))
    indegree = Counter(rel.dst_id for rel in biggest.rows)
    mean = len(biggest.rows) / len(indegree)
    assert max(indegree.values()) >= 5 * mean, "expected hubs"


def test_academic_citations_point_back_in_time_and_papers_have_one_venue() -> None:
    g = small("academic")
    year = {r["id"]: r["year"] for r in g.nodes["Paper"].rows}
    assert all(year[r.dst_id] <= year[r.src_id] for r in g.rels["CITES"].rows)
    venues_per_paper = Counter(r.src_id for r in g.rels["PUBLISHED_IN"].rows)
    assert set(venues_per_paper) == set(year) and set(venues_per_paper.values()) == {1}
    assert {r.dst_id for r in g.rels["PUBLISHED_IN"].rows} == {r["id"] for r in g.nodes["Venue"].rows}
    authors = {r["id"] for r in g.nodes["Author"].rows}
    assert {r.src_id for r in g.rels["WROTE"].rows} == authors  # nobody without a paper
    positions: dict[str, list[int]] = {}
    for r in g.rels["WROTE"].rows:
        positions.setdefault(r.dst_id, []).append(r.properties["position"])
    assert all(sorted(p) == list(range(1, len(p) + 1)) for p in positions.values())


def test_ecommerce_items_have_one_brand_and_brand_named_titles() -> None:
    g = small("ecommerce")
    brand_name = {r["id"]: r["name"] for r in g.nodes["Brand"].rows}
    made_by = {r.src_id: r.dst_id for r in g.rels["MADE_BY"].rows}
    assert len(made_by) == len(g.rels["MADE_BY"].rows) == len(g.nodes["Item"].rows)
    for item in g.nodes["Item"].rows:
        assert item["title"].startswith(brand_name[made_by[item["id"]]])
        assert item["price"] > 0 and 1.0 <= item["rating"] <= 5.0


@pytest.mark.parametrize("bad", [0, 10, -5, "big", 2.5, True])
def test_bad_scale_is_refused(bad: object) -> None:
    with pytest.raises(ImportFormatError, match="scale"):
        generate("academic", scale=bad)  # type: ignore[arg-type]


def test_unknown_domain_lists_the_valid_ones() -> None:
    with pytest.raises(ImportFormatError, match="academic, ecommerce, biomedical"):
        generate("movies")
    with pytest.raises(ImportFormatError, match="unknown demo domain"):
        scale_for_edges("movies", 10)


@pytest.mark.slow
def test_a_million_edges() -> None:
    g = generate("biomedical", scale=scale_for_edges("biomedical", 1_000_000))
    assert g.rel_count >= 1_000_000
