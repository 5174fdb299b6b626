"""GRAIN graph-IR tool: validation, exact solvers checked against brute force, determinism,
invariance under renaming, error battery, and budgets at GRIT's largest size (60 nodes)."""

from __future__ import annotations

import doctest
import itertools
import json
import math
import random
import time
import zlib
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import Bounds, LinearConstraint, milp

from components.tools.graph_ir import (
    ERROR_CODES,
    SOLVERS,
    GraphIR,
    IRError,
    SolveOptions,
    SolverResult,
    natural_key,
    parse_graph_ir,
    run_graph_tool,
    solve,
    to_networkx,
    validate_ir,
)

Edge = tuple[str, str, Any]
NAME_POOL = ["a", "B", "n2", "n10", "n1", "Z", "x3", "x20", "m", "k01", "k1", "7"]


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def ir_dict(
    ptype: str,
    edges: Iterable[Edge],
    *,
    nodes: Iterable[str] = (),
    directed: bool = False,
    weighted: bool = True,
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    data: dict[str, dict[str, Any]] = {n: {} for n in nodes}
    for u, v, w in edges:
        data.setdefault(u, {})[v] = w
    return {
        "problem_type": ptype,
        "graph": {"type": "adjacency_list", "data": data, "directed": directed, "weighted": weighted},
        "parameters": params or {},
    }


def make_ir(ptype: str, edges: Iterable[Edge], **kw: Any) -> GraphIR:
    ir = validate_ir(ir_dict(ptype, edges, **kw))
    assert isinstance(ir, GraphIR), ir
    return ir


def random_graph(
    rng: random.Random,
    n: int,
    p: float,
    *,
    directed: bool = False,
    weights: Sequence[Any] = (1, 2, 3, 4, 5, 6, 7, 8, 9),
    names: Sequence[str] | None = None,
) -> tuple[list[str], list[Edge]]:
    nodes = list(names[:n]) if names else [f"n{i}" for i in range(n)]
    pairs = itertools.permutations(nodes, 2) if directed else itertools.combinations(nodes, 2)
    edges = [(u, v, rng.choice(weights)) for u, v in pairs if rng.random() < p]
    return nodes, edges


def exact(w: Any) -> Decimal:
    return Decimal(repr(w)) if isinstance(w, float) else Decimal(w)


def weight_map(edges: Iterable[Edge], directed: bool) -> dict[tuple[str, str], Decimal]:
    out = {}
    for u, v, w in edges:
        out[u, v] = exact(w)
        if not directed:
            out[v, u] = exact(w)
    return out


def nat(seq: Iterable[str]) -> list[Any]:
    return [natural_key(x) for x in seq]


def ok(result: SolverResult, status: str = "ok") -> Any:
    assert result.status == status, result
    return result.answer


# ---- brute force references ----------------------------------------------------------------


def brute_shortest_path(nodes: list[str], edges: list[Edge], directed: bool, s: str, t: str):
    if s == t:
        return [s], Decimal(0)
    g = nx.DiGraph() if directed else nx.Graph()
    g.add_nodes_from(nodes)
    g.add_edges_from((u, v) for u, v, _ in edges)
    w = weight_map(edges, directed)
    paths = list(nx.all_simple_paths(g, s, t))
    if not paths:
        return None, None
    cost = {tuple(p): sum((w[a, b] for a, b in zip(p, p[1:])), Decimal(0)) for p in paths}
    best = min(paths, key=lambda p: (cost[tuple(p)], len(p), nat(p)))
    return best, cost[tuple(best)]


def brute_chromatic(nodes: list[str], edges: list[Edge]) -> int:
    """Minimum number of blocks over all set partitions into independent sets."""
    idx = {v: i for i, v in enumerate(nodes)}
    adj = [set() for _ in nodes]
    for u, v, _ in edges:
        adj[idx[u]].add(idx[v])
        adj[idx[v]].add(idx[u])
    best = len(nodes)

    def grow(i: int, colors: list[int], k: int) -> None:
        nonlocal best
        if k >= best:
            return
        if i == len(nodes):
            best = k
            return
        for c in range(k + 1):
            if all(colors[j] != c for j in adj[i] if j < i):
                colors.append(c)
                grow(i + 1, colors, max(k, c + 1))
                colors.pop()

    grow(0, [], 0)
    return best


def brute_vertex_cover(nodes: list[str], edges: list[Edge]) -> list[str]:
    ordered = sorted(nodes, key=natural_key)
    for k in range(len(ordered) + 1):
        for combo in itertools.combinations(ordered, k):  # lexicographic order
            chosen = set(combo)
            if all(u in chosen or v in chosen for u, v, _ in edges):
                return list(combo)
    raise AssertionError("unreachable")


def brute_tsp(nodes: list[str], edges: list[Edge], directed: bool, start: str):
    w = weight_map(edges, directed)
    others = sorted((v for v in nodes if v != start), key=natural_key)
    if not others:
        return [start], Decimal(0)
    best, best_cost = None, None
    for perm in itertools.permutations(others):  # lexicographic order
        tour = [start, *perm, start]
        if all((a, b) in w for a, b in zip(tour, tour[1:])):
            cost = sum((w[a, b] for a, b in zip(tour, tour[1:])), Decimal(0))
            if best_cost is None or cost < best_cost:
                best, best_cost = tour, cost
    return best, best_cost


def milp_vertex_cover_size(nodes: list[str], edges: list[Edge]) -> int:
    """Independent reference for large graphs: the textbook ILP solved by HiGHS."""
    idx = {v: i for i, v in enumerate(nodes)}
    a = np.zeros((len(edges), len(nodes)))
    for r, (u, v, _) in enumerate(edges):
        a[r, idx[u]] = a[r, idx[v]] = 1
    res = milp(
        np.ones(len(nodes)),
        integrality=np.ones(len(nodes)),
        bounds=Bounds(0, 1),
        constraints=[LinearConstraint(a, 1, np.inf)] if edges else [],
    )
    assert res.status == 0
    return round(res.fun)


def assert_proper_coloring(ir: GraphIR, coloring: dict[str, int], k: int) -> None:
    assert set(coloring) == set(ir.nodes)
    assert set(coloring.values()) == set(range(k))
    for u, v, _ in ir.edges:
        assert coloring[u] != coloring[v], (u, v)
    # canonical: colours appear in order 0, 1, 2, ... over the naturally sorted nodes
    seen: list[int] = []
    for n in ir.nodes:
        if coloring[n] not in seen:
            seen.append(coloring[n])
    assert seen == list(range(k))


def assert_cover(ir: GraphIR, cover: list[str]) -> None:
    chosen = set(cover)
    assert all(u in chosen or v in chosen for u, v, _ in ir.edges)
    assert cover == sorted(cover, key=natural_key)


def tour_cost(ir: GraphIR, tour: list[str]) -> Decimal:
    w = weight_map(ir.edges, ir.directed)
    if len(ir.nodes) == 1:
        assert tour == list(ir.nodes)
        return Decimal(0)
    assert tour[0] == tour[-1]
    assert sorted(tour[:-1], key=natural_key) == list(ir.nodes)
    return sum((w[a, b] for a, b in zip(tour, tour[1:])), Decimal(0))


# --------------------------------------------------------------------------------------------
# the paper's example, text interface
# --------------------------------------------------------------------------------------------

PAPER_CALL = """<think>...</think>
<graph>{ "problem_type" : "shortest_path", "graph" : { "type" : "adjacency_list", "data" : {
"Knights Market" : { "Xundral View" : 7, "Skyline Gardens" : 1, "Dragons Gate" : 3, "Trelvon Bay" : 6 },
"Xundral View" : { "Trelvon Bay": 1 }, "Draycon Arcade" : { "Copper Clock Square" : 2, "Vorlen Heights" : 8 },
"Copper Clock Square" : { "Trelvon Bay" : 7, "Vorlen Heights" : 5, "Zaphrel Summit" : 8 },
"Granite Plaza" : { "Trelvon Bay": 8 }, "Dragons Gate" : { "Trelvon Bay": 7 }, "Trelvon Bay" : {},
"Zaphrel Summit" : {} }, "directed" : false, "weighted" : true },
"parameters" : { "start" : "Xundral View", "end" : "Zaphrel Summit", "algorithm" : "dijkstra" } }</graph>"""


def test_paper_example_round_trip() -> None:
    out = run_graph_tool(PAPER_CALL)
    assert out.startswith("<result>") and out.endswith("</result>")
    body = json.loads(out[len("<result>") : -len("</result>")])
    assert body["status"] == "ok" and body["method"] == "dijkstra" and body["optimal"] is True
    assert body["answer"]["path"] == ["Xundral View", "Trelvon Bay", "Copper Clock Square", "Zaphrel Summit"]
    assert body["answer"]["total_weight"] == 16
    ir = parse_graph_ir(PAPER_CALL)
    assert isinstance(ir, GraphIR)
    assert len(ir.nodes) == 10  # neighbour-only nodes (Skyline Gardens, Vorlen Heights) count
    assert ir.parameters == {"source": "Xundral View", "target": "Zaphrel Summit"}
    assert ir.warnings == ()


def test_error_observation_is_a_result_block() -> None:
    out = run_graph_tool("<graph>{not json}</graph>")
    body = json.loads(out[len("<result>") : -len("</result>")])
    assert body["status"] == "error" and body["code"] == "invalid_json"


def test_code_fences_and_bare_json_are_accepted() -> None:
    raw = json.dumps(ir_dict("bfs", [("a", "b", 1)], params={"source": "a"}))
    assert isinstance(parse_graph_ir(raw), GraphIR)
    assert isinstance(parse_graph_ir(f"<graph>\n```json\n{raw}\n```\n</graph>"), GraphIR)


def test_docstring_examples() -> None:
    import importlib
    import pkgutil

    import components.tools.graph_ir as package

    failures = tried = 0
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        result = doctest.testmod(importlib.import_module(info.name), optionflags=doctest.NORMALIZE_WHITESPACE)
        failures, tried = failures + result.failed, tried + result.attempted
    assert tried >= 10 and failures == 0


def test_integral_floats_are_ints_and_decimals_stay_exact() -> None:
    ir = make_ir("tsp", [("a", "b", 7.0), ("b", "c", 0.1), ("a", "c", 0.2)])
    assert ir.edges == (("a", "b", 7), ("a", "c", 0.2), ("b", "c", 0.1))
    ans = ok(solve(ir))
    assert ans.total_weight == 7.3 and ans.tour == ["a", "b", "c", "a"]
    ints = ok(solve(make_ir("tsp", [("a", "b", 7.0), ("b", "c", 1), ("a", "c", 2)])))
    assert ints.total_weight == 10 and isinstance(ints.total_weight, int)


def test_to_networkx_and_canonical_dict() -> None:
    ir = make_ir("shortest_path", [("b", "a", 2.5), ("a", "c", 1)], params={"source": "a", "target": "b"})
    g = to_networkx(ir)
    assert not g.is_directed() and list(g.nodes) == ["a", "b", "c"]
    assert g["b"]["a"]["weight"] == 2.5 and g.number_of_edges() == 2
    again = validate_ir(ir.to_dict())
    assert again == ir
    dg = to_networkx(make_ir("bfs", [("b", "a", 1)], directed=True, weighted=False, params={"source": "a"}))
    assert dg.is_directed() and list(dg.edges) == [("b", "a")]


# --------------------------------------------------------------------------------------------
# optimality against brute force
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("directed", [False, True])
def test_shortest_path_matches_brute_force(directed: bool) -> None:
    rng = random.Random(11 + directed)
    weights = (0, 1, 1, 2, 3, 0.5, 0.25, 1.5)  # zeros and decimals force the tie-breaks
    for trial in range(60):
        n = rng.randint(1, 8)
        nodes, edges = random_graph(
            rng, n, rng.choice([0.2, 0.4, 0.7]), directed=directed, weights=weights, names=NAME_POOL
        )
        s, t = rng.choice(nodes), rng.choice(nodes)
        ir = make_ir("shortest_path", edges, nodes=nodes, directed=directed, params={"source": s, "target": t})
        result = solve(ir)
        path, cost = brute_shortest_path(nodes, edges, directed, s, t)
        if path is None:
            ans = ok(result, "no_solution")
            assert ans.reachable is False and ans.path == [] and ans.total_weight is None
            continue
        ans = ok(result)
        assert ans.path == path, (trial, edges, s, t)
        assert exact(ans.total_weight) == cost
        assert ans.num_edges == len(path) - 1
        if s != t:
            assert math.isclose(ans.total_weight, nx.dijkstra_path_length(to_networkx(ir), s, t))


def test_shortest_path_many_equal_paths_takes_lexicographically_smallest() -> None:
    # a 3x3 grid: six shortest paths of 4 edges between the corners
    grid = nx.grid_2d_graph(3, 3)
    name = {(r, c): f"r{r}c{c}" for r, c in grid.nodes}
    edges = [(name[u], name[v], 1) for u, v in grid.edges]
    ans = ok(solve(make_ir("shortest_path", edges, weighted=False, params={"source": "r2c2", "target": "r0c0"})))
    assert ans.path == ["r2c2", "r1c2", "r0c2", "r0c1", "r0c0"]
    rng = random.Random(17)
    for _ in range(40):
        directed = rng.random() < 0.5
        nodes, edges = random_graph(rng, rng.randint(2, 8), 0.45, directed=directed, weights=(1,), names=NAME_POOL)
        s, t = rng.sample(nodes, 2)
        ir = make_ir(
            "shortest_path", edges, nodes=nodes, directed=directed, weighted=False, params={"source": s, "target": t}
        )
        path, _ = brute_shortest_path(nodes, edges, directed, s, t)
        assert solve(ir).answer.path == (path or [])


def test_shortest_path_exact_decimal_ties() -> None:
    # exact: 0.7 + 0.1 == 0.8, a tie broken by fewer edges; float says 0.7999999999999999 < 0.8
    ir = make_ir(
        "shortest_path", [("A", "C", 0.8), ("A", "B", 0.7), ("B", "C", 0.1)], params={"source": "A", "target": "C"}
    )
    ans = ok(solve(ir))
    assert ans.path == ["A", "C"] and ans.total_weight == 0.8 and ans.exact_arithmetic
    inexact = make_ir("shortest_path", [("A", "B", 1e-7)], params={"source": "A", "target": "B"})
    assert ok(solve(inexact)).exact_arithmetic is False


def test_coloring_matches_brute_force() -> None:
    rng = random.Random(5)
    for _ in range(60):
        n = rng.randint(1, 9)
        nodes, edges = random_graph(rng, n, rng.choice([0.2, 0.5, 0.8]), names=NAME_POOL)
        ir = make_ir("graph_coloring", edges, nodes=nodes, weighted=False)
        result = solve(ir)
        ans = ok(result)
        assert result.optimal is True and result.method == "dsatur-branch-and-bound"
        assert ans.num_colors == brute_chromatic(nodes, edges)
        assert ans.lower_bound <= ans.num_colors
        assert_proper_coloring(ir, ans.coloring, ans.num_colors)
        assert [sorted(c, key=natural_key) for c in ans.color_classes] == ans.color_classes
        assert sorted(itertools.chain(*ans.color_classes), key=natural_key) == list(ir.nodes)


# Graphs on which the greedy DSATUR colouring (the search's first incumbent) is NOT optimal,
# so the branch and bound has to find the better colouring: (chromatic number, edges).
GREEDY_SUBOPTIMAL = [
    (4, "n0-n2 n0-n4 n0-n5 n0-n6 n0-n8 n1-n2 n1-n3 n1-n4 n1-n7 n2-n3 n2-n6 n2-n7 n3-n4 n3-n7 n4-n5 n5-n6 n5-n8 n6-n7"),
    (
        3,
        "n0-n3 n0-n5 n0-n7 n1-n3 n1-n6 n1-n8 n1-n9 n2-n3 n2-n5 n2-n8 n3-n4 n3-n5 n4-n6 n4-n8 "
        "n5-n6 n6-n7 n6-n8 n7-n8 n7-n9",
    ),
    (3, "n0-n1 n0-n3 n0-n4 n0-n5 n1-n3 n1-n4 n1-n8 n2-n8 n3-n6 n4-n7 n4-n9 n5-n6 n5-n7 n6-n7"),
]


@pytest.mark.parametrize("chi,spec", GREEDY_SUBOPTIMAL)
def test_coloring_improves_on_greedy(chi: int, spec: str) -> None:
    edges = [(*pair.split("-"), 1) for pair in spec.split()]
    nodes = sorted({x for u, v, _ in edges for x in (u, v)}, key=natural_key)
    assert brute_chromatic(nodes, edges) == chi
    ans = ok(solve(make_ir("graph_coloring", edges, weighted=False)))
    assert ans.num_colors == chi
    assert_proper_coloring(make_ir("graph_coloring", edges), ans.coloring, chi)


def test_coloring_known_graphs() -> None:
    cases = [
        (nx.mycielski_graph(4), 4),
        (nx.petersen_graph(), 3),
        (nx.cycle_graph(7), 3),
        (nx.complete_graph(6), 6),
        (nx.empty_graph(3), 1),
    ]
    for graph, chi in cases:
        ir = make_ir(
            "coloring",
            [(str(u), str(v), 1) for u, v in graph.edges],
            nodes=[str(v) for v in graph.nodes],
            weighted=False,
        )
        ans = ok(solve(ir))
        assert ans.num_colors == chi
        assert_proper_coloring(ir, ans.coloring, chi)


def test_vertex_cover_matches_brute_force_including_tie_break() -> None:
    rng = random.Random(7)
    for _ in range(80):
        n = rng.randint(1, 9)
        directed = rng.random() < 0.2
        nodes, edges = random_graph(rng, n, rng.choice([0.2, 0.4, 0.7]), directed=directed, names=NAME_POOL)
        ir = make_ir("vertex_cover", edges, nodes=nodes, directed=directed)
        result = solve(ir)
        ans = ok(result)
        assert result.optimal is True and ans.canonical is True
        assert ans.cover == brute_vertex_cover(nodes, edges)  # lexicographically smallest
        assert ans.size == len(ans.cover) == ans.lower_bound


@pytest.mark.parametrize("directed", [False, True])
def test_tsp_held_karp_matches_brute_force(directed: bool) -> None:
    rng = random.Random(3 + directed)
    for _ in range(40):
        n = rng.randint(1, 8)
        nodes, edges = random_graph(
            rng, n, rng.choice([0.5, 0.8, 1.0]), directed=directed, weights=(1, 2, 3, 5, 8, -1, 2.5), names=NAME_POOL
        )
        start = rng.choice(nodes)
        ir = make_ir("tsp", edges, nodes=nodes, directed=directed, params={"start": start})
        result = solve(ir)
        tour, cost = brute_tsp(nodes, edges, directed, start)
        if tour is None:
            ans = ok(result, "no_solution")
            assert ans.tour_exists is False and ans.tour == [] and result.optimal is True
            continue
        ans = ok(result)
        assert result.optimal is True and ans.tour == tour and ans.canonical  # lex-smallest
        assert exact(ans.total_weight) == cost == tour_cost(ir, ans.tour)


@pytest.mark.parametrize("directed", [False, True])
def test_tsp_milp_matches_brute_force(directed: bool) -> None:
    rng = random.Random(30 + directed)
    milp_only = SolveOptions(held_karp_max_nodes=0)
    for _ in range(20):
        n = rng.randint(3, 8)
        nodes, edges = random_graph(
            rng, n, rng.choice([0.6, 1.0]), directed=directed, weights=(1, 2, 3, 5, 8, 13, 0.5), names=NAME_POOL
        )
        start = nodes[0]
        ir = make_ir("tsp", edges, nodes=nodes, directed=directed, params={"start": start})
        result = solve(ir, milp_only)
        tour, cost = brute_tsp(nodes, edges, directed, start)
        if tour is None:
            assert ok(result, "no_solution").tour_exists is False
            continue
        ans = ok(result)
        assert result.method.startswith("milp-highs") and result.optimal is True
        assert ans.tour[0] == start and exact(ans.total_weight) == cost == tour_cost(ir, ans.tour)


def test_tsp_small_cases_and_default_start() -> None:
    one = ok(solve(make_ir("tsp", [], nodes=["solo"])))
    assert one.tour == ["solo"] and one.total_weight == 0
    two = ok(solve(make_ir("tsp", [("b", "a", 4)])))
    assert two.start == "a" and two.tour == ["a", "b", "a"] and two.total_weight == 8
    path = solve(make_ir("tsp", [("a", "b", 1), ("b", "c", 1)]))
    assert ok(path, "no_solution").tour_exists is False


# --------------------------------------------------------------------------------------------
# BFS and centrality
# --------------------------------------------------------------------------------------------


def test_bfs_hand_computed() -> None:
    edges = [("s", "n10", 1), ("s", "n2", 1), ("n2", "x", 1), ("n10", "b", 1), ("b", "x", 1)]
    ir = make_ir("bfs", edges, nodes=["lonely"], weighted=False, params={"source": "s"})
    ans = ok(solve(ir))
    assert ans.order == ["s", "n2", "n10", "x", "b"]  # n2 before n10: natural order
    assert ans.layers == [["s"], ["n2", "n10"], ["x", "b"]]
    assert ans.unreached == ["lonely"]
    directed = make_ir("bfs", [("a", "b", 1), ("c", "a", 1)], directed=True, weighted=False, params={"source": "a"})
    assert ok(solve(directed)).order == ["a", "b"]


def test_bfs_matches_networkx_sorted_neighbours() -> None:
    rng = random.Random(2)
    for _ in range(30):
        directed = rng.random() < 0.5
        nodes, edges = random_graph(rng, rng.randint(1, 12), 0.3, directed=directed, names=None)
        src = rng.choice(nodes)
        ir = make_ir("bfs", edges, nodes=nodes, directed=directed, weighted=False, params={"source": src})
        expected = [src] + [
            v for _, v in nx.bfs_edges(to_networkx(ir), src, sort_neighbors=lambda ns: sorted(ns, key=natural_key))
        ]
        assert ok(solve(ir)).order == expected


def test_centrality_hand_computed() -> None:
    star = [("hub", leaf, 1) for leaf in ("a", "b", "c", "d")]
    deg = ok(solve(make_ir("centrality", star, params={"kind": "degree"})))
    assert deg.scores["hub"] == 1.0 and deg.scores["a"] == 0.25
    assert deg.max_nodes == ["hub"] and deg.max_score == 1.0
    path = [("a", "b", 1), ("b", "c", 1)]
    btw = ok(solve(make_ir("betweenness_centrality", path, weighted=False)))
    assert btw.kind == "betweenness" and btw.scores == {"a": 0.0, "b": 1.0, "c": 0.0}
    clo = ok(solve(make_ir("centrality", path, weighted=False, params={"type": "closeness"})))
    assert clo.scores == {"a": round(2 / 3, 6), "b": 1.0, "c": round(2 / 3, 6)}
    tie = ok(
        solve(
            make_ir(
                "centrality",
                [("a", "b", 1), ("c", "d", 1)],
                params={"centrality": "degree", "top_k": 3, "nodes": ["d", "a"]},
            )
        )
    )
    third = round(1 / 3, 6)
    assert tie.max_nodes == ["a", "b", "c", "d"] and tie.top_k == [["a", third], ["b", third], ["c", third]]
    assert tie.requested == {"a": third, "d": third}
    d = make_ir("centrality", [("a", "b", 1), ("c", "b", 1)], directed=True, params={"kind": "in_degree"})
    assert ok(solve(d)).max_nodes == ["b"]


@pytest.mark.parametrize(
    "kind,fn",
    [
        ("degree", lambda g: nx.degree_centrality(g)),
        ("betweenness", lambda g: nx.betweenness_centrality(g, weight="weight")),
        ("closeness", lambda g: nx.closeness_centrality(g, distance="weight")),
        ("pagerank", lambda g: nx.pagerank(g, weight="weight", tol=1e-12, max_iter=10_000)),
    ],
)
def test_centrality_matches_networkx(kind: str, fn: Any) -> None:
    rng = random.Random(9)
    for _ in range(10):
        directed = rng.random() < 0.5
        nodes, edges = random_graph(rng, rng.randint(2, 12), 0.3, directed=directed)
        ir = make_ir("centrality", edges, nodes=nodes, directed=directed, params={"kind": kind})
        ans = ok(solve(ir))
        ref = fn(to_networkx(ir))
        assert list(ans.scores) == list(ir.nodes)
        for v in ir.nodes:
            assert abs(ans.scores[v] - ref[v]) <= 1e-6
        assert ans.max_nodes == [v for v in ir.nodes if ans.scores[v] == max(ans.scores.values())]


# --------------------------------------------------------------------------------------------
# determinism and invariance
# --------------------------------------------------------------------------------------------


def _task_params(rng: random.Random, ptype: str, nodes: list[str]) -> dict[str, Any]:
    if ptype == "shortest_path":
        return {"source": nodes[0], "target": nodes[-1]}
    if ptype == "bfs":
        return {"source": nodes[0]}
    if ptype == "tsp":
        return {"start": nodes[1]}
    if ptype == "centrality":
        return {"kind": rng.choice(["degree", "betweenness", "closeness", "pagerank"]), "top_k": 2}
    return {}


def _shuffled_dict(rng: random.Random, d: dict[str, Any], directed: bool) -> dict[str, Any]:
    """Same IR, different insertion order; undirected edges may move to the other endpoint."""
    edges = [(u, v, w) for u, nbrs in d["graph"]["data"].items() for v, w in nbrs.items()]
    if not directed:
        edges = [(v, u, w) if rng.random() < 0.5 else (u, v, w) for u, v, w in edges]
    rng.shuffle(edges)
    nodes = list(d["graph"]["data"])
    rng.shuffle(nodes)
    out = ir_dict(
        d["problem_type"],
        edges,
        nodes=nodes,
        directed=directed,
        weighted=d["graph"]["weighted"],
        params=dict(d["parameters"]),
    )
    return out


@pytest.mark.parametrize("ptype", list(SOLVERS))
def test_same_ir_any_insertion_order_gives_identical_result(ptype: str) -> None:
    rng = random.Random(zlib.crc32(ptype.encode()))
    for _ in range(6):
        nodes, edges = random_graph(rng, 9, 0.5 if ptype != "tsp" else 1.0, names=NAME_POOL)
        d = ir_dict(ptype, edges, nodes=nodes, params=_task_params(rng, ptype, nodes))
        first = solve(validate_ir(d))
        assert first.to_json() == solve(validate_ir(d)).to_json()
        for _ in range(3):
            other = validate_ir(_shuffled_dict(rng, d, False))
            assert other == validate_ir(d)
            assert solve(other) == first
            assert run_graph_tool(f"<graph>{json.dumps(d)}</graph>") == f"<result>{first.to_json()}</result>"


def _rename(d: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    data = {mapping[u]: {mapping[v]: w for v, w in nbrs.items()} for u, nbrs in d["graph"]["data"].items()}
    params = {k: (mapping[v] if isinstance(v, str) and v in mapping else v) for k, v in d["parameters"].items()}
    return {**d, "graph": {**d["graph"], "data": data}, "parameters": params}


def _map_names(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {mapping.get(k, k): _map_names(v, mapping) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_map_names(v, mapping) for v in value]
    return mapping.get(value, value) if isinstance(value, str) else value


def _optimum(result: SolverResult) -> Any:
    a = result.answer
    return {
        "shortest_path": lambda: a.total_weight,
        "graph_coloring": lambda: a.num_colors,
        "tsp": lambda: a.total_weight,
        "vertex_cover": lambda: a.size,
        "bfs": lambda: len(a.order),
        "centrality": lambda: a.max_score,
    }[result.problem_type]()


@pytest.mark.parametrize("ptype", list(SOLVERS))
def test_renaming_by_an_isomorphism(ptype: str) -> None:
    rng = random.Random(len(ptype))
    for _ in range(5):
        nodes, edges = random_graph(rng, 8, 0.5 if ptype != "tsp" else 1.0)
        d = ir_dict(ptype, edges, nodes=nodes, params=_task_params(rng, ptype, nodes))
        base = solve(validate_ir(d))
        # 1) order-preserving renaming: the result is the same up to the renaming
        monotone = {f"n{i}": f"site-{i:03d}" for i in range(8)}
        renamed = solve(validate_ir(_rename(d, monotone))).to_dict()
        expected = _map_names(base.to_dict(), monotone)
        renamed.pop("summary"), expected.pop("summary")
        assert renamed == expected
        # 2) an arbitrary permutation of names: same optimum, valid solution
        shuffled = nodes[:]
        rng.shuffle(shuffled)
        perm = dict(zip(nodes, [f"v{rng.randint(0, 99)}_{s}" for s in shuffled]))
        other = solve(validate_ir(_rename(d, perm)))
        assert other.status == base.status and _optimum(other) == _optimum(base)


# --------------------------------------------------------------------------------------------
# malformed IR battery
# --------------------------------------------------------------------------------------------

G_OK = {"type": "adjacency_list", "data": {"a": {"b": 1}}, "directed": False, "weighted": True}


def _call(obj: Any) -> str:
    return f"<graph>{json.dumps(obj)}</graph>"


BAD_CALLS: list[tuple[str, Any]] = [
    ("no_graph_block", "<graph>{}"),
    ("no_graph_block", "<graph>   </graph>"),
    ("multiple_graph_blocks", "<graph>{}</graph><graph>{}</graph>"),
    ("invalid_json", "<graph>{'problem_type': 'bfs'}</graph>"),
    ("invalid_json", "just some prose"),
    ("not_an_object", _call([1, 2])),
    ("not_an_object", _call({"problem_type": "bfs", "graph": []})),
    ("not_an_object", _call({"problem_type": "bfs", "graph": {**G_OK, "data": [["a", "b"]]}})),
    ("duplicate_key", '<graph>{"problem_type": "bfs", "problem_type": "tsp"}</graph>'),
    ("duplicate_key", _call({"problem_type": "bfs", "graph": {**G_OK, "weighted": False, "data": {"a": ["b", "b"]}}})),
    ("missing_key", _call({"graph": G_OK})),
    ("missing_key", _call({"problem_type": "bfs"})),
    ("missing_key", _call({"problem_type": "bfs", "graph": {"directed": False, "weighted": True}})),
    ("missing_key", _call({"problem_type": "bfs", "graph": {"data": {}, "weighted": True}})),
    ("missing_key", _call({"problem_type": "bfs", "graph": {"data": {}, "directed": True}})),
    ("wrong_type", _call({"problem_type": 3, "graph": G_OK})),
    ("wrong_type", _call({"problem_type": "bfs", "graph": {**G_OK, "directed": "false"}})),
    ("wrong_type", _call({"problem_type": "bfs", "graph": G_OK, "parameters": ["a"]})),
    ("wrong_type", _call({"problem_type": "bfs", "graph": {**G_OK, "data": {"a": 5}}})),
    ("unsupported_format", _call({"problem_type": "bfs", "graph": {**G_OK, "type": "edge_list"}})),
    ("unknown_problem_type", _call({"problem_type": "max_flow", "graph": G_OK})),
    ("bad_node_name", _call({"problem_type": "bfs", "graph": {**G_OK, "data": {"": {}}}})),
    ("bad_node_name", _call({"problem_type": "bfs", "graph": {**G_OK, "weighted": False, "data": {"a": [["b"]]}}})),
    ("bad_weight", _call({"problem_type": "tsp", "graph": {**G_OK, "data": {"a": {"b": "3"}}}})),
    ("bad_weight", _call({"problem_type": "tsp", "graph": {**G_OK, "data": {"a": {"b": True}}}})),
    ("bad_weight", _call({"problem_type": "tsp", "graph": {**G_OK, "data": {"a": {"b": None}}}})),
    (
        "bad_weight",
        '<graph>{"problem_type": "tsp", "graph": {"type": "adjacency_list", "data": '
        '{"a": {"b": NaN}}, "directed": false, "weighted": true}}</graph>',
    ),
    ("bad_weight", _call({"problem_type": "tsp", "graph": {**G_OK, "data": {"a": ["b"]}}})),
    (
        "negative_weight",
        _call(
            {
                "problem_type": "shortest_path",
                "graph": {**G_OK, "data": {"a": {"b": -1}}},
                "parameters": {"source": "a", "target": "b"},
            }
        ),
    ),
    (
        "negative_weight",
        _call(
            {
                "problem_type": "centrality",
                "graph": {**G_OK, "data": {"a": {"b": -1}}},
                "parameters": {"kind": "closeness"},
            }
        ),
    ),
    ("conflicting_weights", _call({"problem_type": "tsp", "graph": {**G_OK, "data": {"a": {"b": 1}, "b": {"a": 2}}}})),
    ("self_loop", _call({"problem_type": "coloring", "graph": {**G_OK, "data": {"a": {"a": 1}}}})),
    ("empty_graph", _call({"problem_type": "coloring", "graph": {**G_OK, "data": {}}})),
    ("too_large", _call({"problem_type": "coloring", "graph": {**G_OK, "data": {f"v{i}": {} for i in range(201)}}})),
    ("too_large", "<graph>" + " " * 1_000_001 + "</graph>"),
    ("missing_parameter", _call({"problem_type": "shortest_path", "graph": G_OK, "parameters": {"source": "a"}})),
    ("missing_parameter", _call({"problem_type": "bfs", "graph": G_OK})),
    ("bad_parameter", _call({"problem_type": "centrality", "graph": G_OK, "parameters": {"kind": "eigenvector"}})),
    (
        "bad_parameter",
        _call({"problem_type": "centrality", "graph": G_OK, "parameters": {"kind": "degree", "top_k": 0}}),
    ),
    (
        "bad_parameter",
        _call(
            {"problem_type": "shortest_path", "graph": G_OK, "parameters": {"source": "a", "start": "b", "target": "b"}}
        ),
    ),
    ("bad_parameter", _call({"problem_type": "bfs", "graph": G_OK, "parameters": {"source": ["a"]}})),
    (
        "bad_parameter",
        _call({"problem_type": "betweenness_centrality", "graph": G_OK, "parameters": {"kind": "degree"}}),
    ),
    (
        "unknown_node",
        _call({"problem_type": "shortest_path", "graph": G_OK, "parameters": {"source": "a", "target": "zz"}}),
    ),
    ("unknown_node", _call({"problem_type": "tsp", "graph": G_OK, "parameters": {"start": "q"}})),
    ("unknown_node", _call({"problem_type": "centrality", "graph": G_OK, "parameters": {"nodes": ["a", "nope"]}})),
]


@pytest.mark.parametrize("code,text", BAD_CALLS, ids=[f"{c}-{i}" for i, (c, _) in enumerate(BAD_CALLS)])
def test_malformed_ir_battery(code: str, text: str) -> None:
    err = parse_graph_ir(text)
    assert isinstance(err, IRError), err
    assert err.code == code, err
    assert run_graph_tool(text) == f"<result>{json.dumps(err.to_dict(), ensure_ascii=False)}</result>"


def test_battery_covers_every_user_facing_code() -> None:
    covered = {code for code, _ in BAD_CALLS} | {"not_text"}
    assert covered == set(ERROR_CODES) - {"internal_error"}
    assert parse_graph_ir(None).code == "not_text"  # type: ignore[arg-type]


def test_lenient_forms_and_warnings() -> None:
    ir = parse_graph_ir(
        _call(
            {
                "problem_type": "Shortest-Path",
                "graph": {"data": {"1": {"2": 5}, "2": {"1": 5}}, "directed": False, "weighted": False},
                "parameters": {"from": 1, "to": 2, "algorithm": "bellman_ford", "colour": "red"},
            }
        )
    )
    assert isinstance(ir, GraphIR)
    assert ir.problem_type == "shortest_path" and ir.edges == (("1", "2", 1),)
    assert ir.parameters == {"source": "1", "target": "2"}
    assert any("weights were ignored" in w for w in ir.warnings)
    assert any("'colour'" in w for w in ir.warnings)
    result = solve(ir)
    assert result.warnings == ir.warnings and result.to_dict()["warnings"] == list(ir.warnings)
    central = parse_graph_ir(_call({"problem_type": "centrality", "graph": G_OK}))
    assert central.parameters == {"kind": "degree"} and central.warnings
    algo = parse_graph_ir(_call({"problem_type": "centrality", "graph": G_OK, "parameters": {"algorithm": "PageRank"}}))
    assert algo.parameters == {"kind": "pagerank"}
    neg_tsp = parse_graph_ir(_call({"problem_type": "tsp", "graph": {**G_OK, "data": {"a": {"b": -2}}}}))
    assert isinstance(neg_tsp, GraphIR)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_parse_never_raises_on_random_text(text: str) -> None:
    result = parse_graph_ir(text)
    assert isinstance(result, (GraphIR, IRError))
    if isinstance(result, IRError):
        assert result.code in ERROR_CODES and result.code != "internal_error"


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=True)
    | st.sampled_from(["a", "b", "c", "", "bfs", "tsp", "source", "adjacency_list"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "a",
                    "b",
                    "c",
                    "problem_type",
                    "graph",
                    "data",
                    "directed",
                    "weighted",
                    "parameters",
                    "source",
                    "target",
                    "kind",
                    "type",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(list(SOLVERS) + ["coloring", "x"]), _json, _json, st.booleans(), st.booleans())
def test_validate_never_raises_and_valid_irs_solve(
    ptype: str, data: Any, params: Any, directed: bool, weighted: bool
) -> None:
    obj = {
        "problem_type": ptype,
        "graph": {"type": "adjacency_list", "data": data, "directed": directed, "weighted": weighted},
        "parameters": params,
    }
    result = validate_ir(obj)
    assert isinstance(result, (GraphIR, IRError))
    if isinstance(result, IRError):
        assert result.code in ERROR_CODES and result.code != "internal_error", result
    else:
        solved = solve(result)
        assert solved.status in {"ok", "no_solution"}
        json.loads(solved.to_json())


# --------------------------------------------------------------------------------------------
# GRIT sizes, caps and budgets
# --------------------------------------------------------------------------------------------


def test_sixty_node_coloring_and_vertex_cover_within_budget() -> None:
    rng = random.Random(60)
    for p in (0.1, 0.25):
        nodes, edges = random_graph(rng, 60, p)
        began = time.perf_counter()
        col = solve(make_ir("graph_coloring", edges, nodes=nodes, weighted=False), SolveOptions(time_limit_s=10))
        vc = solve(make_ir("vertex_cover", edges, nodes=nodes, weighted=False), SolveOptions(time_limit_s=10))
        assert time.perf_counter() - began < 5
        assert col.status == "ok" and col.optimal is True
        assert col.answer.num_colors >= col.answer.lower_bound
        assert_proper_coloring(
            make_ir("graph_coloring", edges, nodes=nodes), col.answer.coloring, col.answer.num_colors
        )
        assert vc.status == "ok" and vc.optimal is True and vc.answer.canonical
        assert_cover(make_ir("vertex_cover", edges, nodes=nodes), vc.answer.cover)
        graph = nx.Graph()
        graph.add_nodes_from(nodes)
        graph.add_edges_from((u, v) for u, v, _ in edges)
        alpha = nx.max_weight_clique(nx.complement(graph), weight=None)[1]
        assert vc.answer.size == 60 - alpha
        if p == 0.1:  # an independent ILP check (HiGHS is slow on denser MIS instances)
            assert vc.answer.size == milp_vertex_cover_size(nodes, edges)


def test_tsp_at_and_above_its_cap() -> None:
    rng = random.Random(61)
    pts = [(rng.random() * 100, rng.random() * 100) for _ in range(61)]
    edges = [(f"c{i}", f"c{j}", round(math.dist(pts[i], pts[j]), 1)) for i in range(61) for j in range(i + 1, 61)]
    at_cap = [e for e in edges if e[0] != "c60" and e[1] != "c60"]
    ir = make_ir("tsp", at_cap)
    began = time.perf_counter()
    result = solve(ir, SolveOptions(time_limit_s=10))
    assert time.perf_counter() - began < 8
    ans = ok(result)
    assert result.optimal is True and result.method.startswith("milp-highs")
    assert exact(ans.total_weight) == tour_cost(ir, ans.tour)
    # a 2-opt local search cannot improve an optimal tour
    assert _two_opt_gain(ir, ans.tour) >= 0
    both_ways = [(u, v, w) for u, v, w in at_cap] + [(v, u, w) for u, v, w in at_cap]
    as_digraph = solve(make_ir("tsp", both_ways, directed=True), SolveOptions(time_limit_s=10))
    assert as_digraph.status == "ok" and as_digraph.answer.total_weight == ans.total_weight
    over = solve(make_ir("tsp", edges))
    assert over.status == "too_large" and over.answer is None and over.optimal is None


def _two_opt_gain(ir: GraphIR, tour: list[str]) -> Decimal:
    w = weight_map(ir.edges, False)
    best = Decimal(0)
    for i in range(1, len(tour) - 2):
        for j in range(i + 1, len(tour) - 1):
            a, b, c, d = tour[i - 1], tour[i], tour[j], tour[j + 1]
            best = min(best, w[a, c] + w[b, d] - w[a, b] - w[c, d])
    return best


def test_timeouts_are_explicit_results() -> None:
    grotzsch = nx.mycielski_graph(4)  # chi = 4, clique number 2: needs a search to prove
    edges = [(str(u), str(v), 1) for u, v in grotzsch.edges]
    col = solve(make_ir("graph_coloring", edges), SolveOptions(time_limit_s=0))
    assert col.status == "timeout" and col.optimal is False
    assert col.answer.lower_bound == 2 and col.answer.num_colors >= 4
    assert_proper_coloring(make_ir("graph_coloring", edges), col.answer.coloring, col.answer.num_colors)
    vc = solve(make_ir("vertex_cover", edges), SolveOptions(time_limit_s=0))
    assert vc.status == "timeout" and vc.optimal is False and not vc.answer.canonical
    assert_cover(make_ir("vertex_cover", edges), vc.answer.cover)
    assert vc.answer.lower_bound <= 6 <= vc.answer.size  # tau(Grötzsch) = 11 - alpha = 11 - 5
    rng = random.Random(1)
    nodes, tsp_edges = random_graph(rng, 20, 1.0)
    tsp = solve(make_ir("tsp", tsp_edges, nodes=nodes), SolveOptions(time_limit_s=0))
    assert tsp.status == "timeout" and tsp.optimal is False and tsp.answer is None


def test_result_json_is_deterministic_and_timing_optional() -> None:
    ir = make_ir("vertex_cover", [("a", "b", 1), ("b", "c", 1)])
    r = solve(ir)
    assert "elapsed_s" not in r.to_dict() and r.to_dict(include_timing=True)["elapsed_s"] >= 0
    assert r.answer.cover == ["b"]
    assert json.loads(r.to_json())["answer"] == {"size": 1, "cover": ["b"], "lower_bound": 1, "canonical": True}
