"""GRIT-style tasks: every item's ground truth re-derived by brute force (independent of the graph-IR
solvers), naming schemes preserve the graph up to isomorphism, splits do not share graphs."""

from __future__ import annotations

import itertools
from collections import deque

import networkx as nx
import pytest

from components.evaluation.grit import (
    NAMINGS,
    SCENARIOS,
    TASKS,
    GritConfig,
    build_item,
    build_splits,
    from_row,
    generate_items,
)
from components.rubric.metrics import exact_match


def _graph(item) -> tuple[nx.Graph, dict]:
    g = nx.Graph()
    for u, nbrs in item.gold_ir["graph"]["data"].items():
        g.add_node(u)
        for v, w in nbrs.items():
            g.add_edge(u, v, weight=w)
    return g, item.gold_ir["parameters"]


def _brute_force(item) -> str:
    g, p = _graph(item)
    nodes = sorted(g.nodes)
    if item.task == "shortest_path":  # every simple path
        return str(min(nx.path_weight(g, path, "weight") for path in nx.all_simple_paths(g, p["source"], p["target"])))
    if item.task == "tsp":  # every ordering of the other nodes
        others = [n for n in nodes if n != p["start"]]
        best = min(
            sum(g[a][b]["weight"] for a, b in itertools.pairwise((p["start"], *perm, p["start"])))
            for perm in itertools.permutations(others)
        )
        return str(best)
    if item.task == "graph_coloring":  # smallest k with a proper k-colouring
        for k in range(1, len(nodes) + 1):
            for colours in itertools.product(range(k), repeat=len(nodes)):
                c = dict(zip(nodes, colours, strict=True))
                if all(c[u] != c[v] for u, v in g.edges):
                    return str(k)
    if item.task == "vertex_cover":  # smallest subset touching every edge
        for k in range(len(nodes) + 1):
            if any(all(u in s or v in s for u, v in g.edges) for s in map(set, itertools.combinations(nodes, k))):
                return str(k)
    if item.task == "bfs":  # queue, neighbours in the solver's documented natural order
        from components.tools.graph_ir import natural_key

        seen, order, queue = {p["source"]}, [], deque([p["source"]])
        while queue:
            u = queue.popleft()
            order.append(u)
            for v in sorted(g.neighbors(u), key=natural_key):
                if v not in seen:
                    seen.add(v)
                    queue.append(v)
        return ", ".join(order)
    degree = dict(g.degree)
    top = max(degree.values())
    return ", ".join(n for n in nodes if degree[n] == top)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("naming", NAMINGS)
def test_ground_truth_matches_brute_force(scenario, naming) -> None:
    for seed in range(3):
        item = build_item(scenario, naming, 6, seed)
        expected = _brute_force(item)
        assert exact_match(item.answer, expected, item.answer_type) == 1.0, (item.id, item.answer, expected)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_namings_are_isomorphic_renamings(scenario) -> None:
    items = [build_item(scenario, naming, 7, 11) for naming in NAMINGS]
    graphs = [_graph(it)[0] for it in items]
    for g in graphs[1:]:
        assert nx.is_isomorphic(graphs[0], g, edge_match=lambda a, b: a["weight"] == b["weight"])
    if items[0].answer_type == "number":  # a renaming leaves numeric answers unchanged
        assert len({it.answer for it in items}) == 1
    names = [set(g.nodes) for g in graphs]
    assert names[0] == {str(i) for i in range(7)} and names[1] != names[0]
    for it in items:  # the story names the task's nodes under the item's own naming
        assert all(v in it.question for k, v in it.gold_ir["parameters"].items() if k in ("source", "target", "start"))


def test_splits_keep_ood_scenarios_out_of_training() -> None:
    config = GritConfig(train=24, test=12, ood=12, large=6)  # GRIT's sizes: 10–40 nodes, large 40–60
    rows = build_splits(config)
    by_split = {s: [r for r in rows if r["split"] == s] for s in ("train", "test", "ood", "large")}
    assert {s: len(v) for s, v in by_split.items()} == {"train": 24, "test": 12, "ood": 12, "large": 6}
    assert all(10 <= r["n_nodes"] <= 40 for s in ("train", "test", "ood") for r in by_split[s])
    assert all(40 <= r["n_nodes"] <= 60 for r in by_split["large"])
    assert len({s.name for s in SCENARIOS}) >= 20 and {s.task for s in SCENARIOS} == set(TASKS)
    assert not {r["scenario"] for r in by_split["train"] + by_split["test"]} & set(config.ood_scenarios)
    assert {r["scenario"] for r in by_split["ood"]} <= set(config.ood_scenarios)
    assert not {r["seed"] for r in by_split["train"]} & {r["seed"] for r in by_split["test"]}
    assert from_row(rows[0])["gold_ir"]["problem_type"] == rows[0]["task"]
    assert build_splits(config) == rows  # deterministic


def test_bad_configs_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="unknown OOD scenarios"):
        GritConfig(ood_scenarios=("nope",))
    with pytest.raises(ValueError, match="unknown naming"):
        build_item(SCENARIOS[0], "klingon", 5, 0)
    with pytest.raises(ValueError, match="name pool"):
        build_item(SCENARIOS[0], "semantic", 100, 0)
    with pytest.raises(ValueError, match="node ranges"):
        GritConfig(sizes=(8, 5))
    with pytest.raises(ValueError, match="unknown grit options"):
        GritConfig.from_dict({"size": [5, 8]})
    assert GritConfig.from_dict({"sizes": [5, 8]}).sizes == (5, 8)
    assert len(generate_items(30, sizes=(4, 5))) == 30
