"""Breadth-first search order, layers and unreached nodes (neighbours in natural order)."""

from __future__ import annotations

from collections import deque

from components.tools.graph_ir._common import _Deadline, _Indexed, _result
from components.tools.graph_ir.ir import GraphIR
from components.tools.graph_ir.results import BFSAnswer, SolveOptions, SolverResult


def _solve_bfs(ir: GraphIR, g: _Indexed, opts: SolveOptions, dl: _Deadline) -> SolverResult:
    s = g.names.index(ir.parameters["source"])
    depth = {s: 0}
    order, queue = [s], deque([s])
    while queue:
        v = queue.popleft()
        for u, _ in g.out[v]:
            if u not in depth:
                depth[u] = depth[v] + 1
                order.append(u)
                queue.append(u)
    layers: list[list[str]] = [[] for _ in range(max(depth.values()) + 1)]
    for v in order:
        layers[depth[v]].append(g.names[v])
    names = [g.names[v] for v in order]
    unreached = [n for i, n in enumerate(g.names) if i not in depth]
    ans = BFSAnswer(g.names[s], names, layers, unreached)
    return _result(
        ir, "ok", "bfs (neighbours in natural order)", None, ans, f"BFS order from {g.names[s]}: {', '.join(names)}."
    )
