"""Shortest path: Dijkstra on (weight, hops) keys, exact and deterministic."""

from __future__ import annotations

import heapq

from components.tools.graph_ir._common import _Deadline, _Indexed, _result
from components.tools.graph_ir.ir import GraphIR, Number
from components.tools.graph_ir.results import (
    ShortestPathAnswer,
    SolveOptions,
    SolverResult,
)


def _dist_to(g: _Indexed, target: int) -> dict[int, tuple[Number, int]]:
    """Dijkstra on the reversed graph with (weight, hops) keys compared lexicographically."""
    dist: dict[int, tuple[Number, int]] = {}
    heap: list[tuple[Number, int, int]] = [(0, 0, target)]
    while heap:
        d, h, v = heapq.heappop(heap)
        if v in dist:
            continue
        dist[v] = (d, h)
        for u, w in g.inn[v]:
            if u not in dist:
                heapq.heappush(heap, (d + w, h + 1, u))
    return dist


def _solve_shortest_path(ir: GraphIR, g: _Indexed, opts: SolveOptions, dl: _Deadline) -> SolverResult:
    src, dst = ir.parameters["source"], ir.parameters["target"]
    s, t = g.names.index(src), g.names.index(dst)
    dist = _dist_to(g, t)
    method = "dijkstra"
    if s not in dist:
        ans = ShortestPathAnswer(src, dst, False, [], None, None, g.arith.exact)
        return _result(ir, "no_solution", method, True, ans, f"No path from {src} to {dst}.")
    path, v = [s], s
    while v != t:
        d, h = dist[v]
        v = next(u for u, w in g.out[v] if u in dist and dist[u][1] == h - 1 and g.arith.close(w + dist[u][0], d))
        path.append(v)
    total = g.arith.report(dist[s][0])
    names = [g.names[i] for i in path]
    ans = ShortestPathAnswer(src, dst, True, names, total, len(path) - 1, g.arith.exact)
    return _result(ir, "ok", method, True, ans, f"Shortest path {' -> '.join(names)}, total weight {total}.")
