"""The solver registry (:data:`SOLVERS`), :func:`solve`, and the environment side of one tool
call (:func:`run_graph_tool`, :func:`graph_tool_result`)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

from components.tools.graph_ir._common import SolverFn, _Deadline, _index
from components.tools.graph_ir.bfs import _solve_bfs
from components.tools.graph_ir.centrality import _solve_centrality
from components.tools.graph_ir.coloring import _solve_coloring
from components.tools.graph_ir.ir import GraphIR, IRError, parse_graph_ir
from components.tools.graph_ir.results import SolveOptions, SolverResult
from components.tools.graph_ir.shortest_path import _solve_shortest_path
from components.tools.graph_ir.tsp import _solve_tsp
from components.tools.graph_ir.vertex_cover import _solve_vertex_cover

SOLVERS: dict[str, SolverFn] = {
    "shortest_path": _solve_shortest_path,
    "graph_coloring": _solve_coloring,
    "tsp": _solve_tsp,
    "vertex_cover": _solve_vertex_cover,
    "bfs": _solve_bfs,
    "centrality": _solve_centrality,
}


def solve(ir: GraphIR, options: SolveOptions | None = None) -> SolverResult:
    """Run the exact solver registered for ``ir.problem_type``.

    >>> ir = parse_graph_ir('{"problem_type": "graph_coloring", "graph": {"type": "adjacency_list",'
    ...     ' "data": {"a": {"b": 1, "c": 1}, "b": {"c": 1}}, "directed": false, "weighted": false}}')
    >>> r = solve(ir)
    >>> r.status, r.method, r.optimal, r.answer.num_colors, r.answer.coloring
    ('ok', 'dsatur-branch-and-bound', True, 3, {'a': 0, 'b': 1, 'c': 2})
    """
    opts = options or SolveOptions()
    began = time.perf_counter()
    result = SOLVERS[ir.problem_type](ir, _index(ir), opts, _Deadline(opts.time_limit_s))
    return replace(result, elapsed_s=round(time.perf_counter() - began, 6))


def run_graph_tool(text: str, options: SolveOptions | None = None) -> str:
    """The environment side of one tool call: ``<graph>`` text in, ``<result>`` observation out.

    Errors come back inside ``<result>`` too, as ``{"status": "error", "code", "message"}``.

    >>> run_graph_tool('<graph>{"problem_type": "shortest_path", "graph": {"type": "adjacency_list",'
    ...     ' "data": {"A": {"B": 2, "C": 5}, "B": {"C": 1}}, "directed": false, "weighted": true},'
    ...     ' "parameters": {"start": "A", "end": "C"}}</graph>')  # doctest: +NORMALIZE_WHITESPACE
    '<result>{"problem_type": "shortest_path", "status": "ok", "method": "dijkstra",
      "optimal": true, "answer": {"source": "A", "target": "C", "reachable": true,
      "path": ["A", "B", "C"], "total_weight": 3, "num_edges": 2, "exact_arithmetic": true},
      "summary": "Shortest path A -> B -> C, total weight 3.", "warnings": []}</result>'
    >>> run_graph_tool("<graph>[1, 2]</graph>")[:68]
    '<result>{"status": "error", "code": "not_an_object", "message": "the'
    """
    return f"<result>{json.dumps(graph_tool_result(text, options), ensure_ascii=False)}</result>"


def graph_tool_result(text: str, options: SolveOptions | None = None) -> dict[str, Any]:
    """The result of one tool call as a dict (an error dict for invalid IR); never raises."""
    ir = parse_graph_ir(text)
    if isinstance(ir, IRError):
        return ir.to_dict()
    try:
        return solve(ir, options).to_dict()
    except Exception as exc:  # noqa: BLE001 - an observation, never a crash
        return IRError("internal_error", f"{type(exc).__name__}: {exc}").to_dict()
