"""Node centrality (degree, betweenness, closeness, PageRank) via networkx, rounded scores."""

from __future__ import annotations

import networkx as nx

from components.tools.graph_ir._common import _Deadline, _Indexed, _result
from components.tools.graph_ir.ir import (
    SCORE_DECIMALS,
    GraphIR,
    natural_key,
    to_networkx,
)
from components.tools.graph_ir.results import (
    CentralityAnswer,
    SolveOptions,
    SolverResult,
)


def _centrality_scores(ir: GraphIR, kind: str) -> dict[str, float]:
    g = to_networkx(ir)
    weight = "weight" if ir.weighted else None
    if kind == "in_degree" and ir.directed:
        return nx.in_degree_centrality(g)
    if kind == "out_degree" and ir.directed:
        return nx.out_degree_centrality(g)
    if kind in ("degree", "in_degree", "out_degree"):
        return nx.degree_centrality(g)
    if kind == "betweenness":
        return nx.betweenness_centrality(g, weight=weight)
    if kind == "closeness":
        return nx.closeness_centrality(g, distance=weight)
    return nx.pagerank(g, weight=weight, tol=1e-12, max_iter=10_000)


def _round_score(x: float) -> float:
    return round(float(x), SCORE_DECIMALS) + 0.0


def _solve_centrality(ir: GraphIR, g: _Indexed, opts: SolveOptions, dl: _Deadline) -> SolverResult:
    kind = ir.parameters["kind"]
    raw = _centrality_scores(ir, kind)
    scores = {n: _round_score(raw[n]) for n in ir.nodes}
    best = max(scores.values())
    top = [n for n in ir.nodes if scores[n] == best]
    ranked = sorted(ir.nodes, key=lambda n: (-scores[n], natural_key(n)))
    k = ir.parameters.get("top_k")
    ans = CentralityAnswer(
        kind,
        scores,
        best,
        top,
        [[n, scores[n]] for n in ranked[:k]] if k else None,
        {n: scores[n] for n in ir.parameters["nodes"]} if "nodes" in ir.parameters else None,
    )
    method = f"networkx-{kind.replace('_', '-')}-centrality" if kind != "pagerank" else "networkx-pagerank"
    return _result(ir, "ok", method, None, ans, f"Highest {kind} centrality {best}: {', '.join(top)}.")
