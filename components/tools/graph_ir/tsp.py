"""Travelling salesman: Held–Karp DP for small graphs, then a DFJ MILP (HiGHS) with
LP-separated and lazily added subtour constraints."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp
from scipy.sparse import csr_array

from components.tools.graph_ir._common import _Deadline, _Indexed, _result
from components.tools.graph_ir.ir import GraphIR
from components.tools.graph_ir.results import SolveOptions, SolverResult, TSPAnswer

# ---- MILP helper ---------------------------------------------------------------------------


@dataclass
class _Milp:
    status: str  # optimal | infeasible | timeout
    x: np.ndarray | None


def _rows_matrix(rows: list[dict[int, float]], n: int) -> csr_array:
    data = [v for r in rows for v in r.values()]
    cols = [c for r in rows for c in r]
    ptr = np.cumsum([0] + [len(r) for r in rows])
    return csr_array((data, cols, ptr), shape=(len(rows), n))


def _lp_constraints(a: csr_array, lo: list[float], hi: list[float]) -> dict[str, Any]:
    """``lo <= a x <= hi`` in linprog's form, for rows with non-negative coefficients over
    ``x >= 0`` (so a lower bound <= 0 is implied and dropped)."""
    lo_a, hi_a = np.asarray(lo, float), np.asarray(hi, float)
    eq = lo_a == hi_a
    if (~eq & (lo_a > 0)).any():
        raise ValueError("only equality rows or rows with a lower bound <= 0 are supported")
    out: dict[str, Any] = {}
    if eq.any():
        out["A_eq"], out["b_eq"] = a[eq], hi_a[eq]
    ub = ~eq & np.isfinite(hi_a)
    if ub.any():
        out["A_ub"], out["b_ub"] = a[ub], hi_a[ub]
    return out


def _run_milp(
    cost: np.ndarray,
    rows: list[dict[int, float]],
    lo: list[float],
    hi: list[float],
    var_lo: np.ndarray,
    var_hi: np.ndarray,
    dl: _Deadline,
) -> _Milp:
    """Binary MILP with HiGHS (scipy), gap 0, under the remaining time budget."""
    if dl.expired():
        return _Milp("timeout", None)
    n = len(cost)
    constraints = [LinearConstraint(_rows_matrix(rows, n), lo, hi)] if rows else []
    res = milp(
        cost,
        integrality=np.ones(n),
        bounds=Bounds(var_lo, var_hi),
        constraints=constraints,
        options={"time_limit": max(dl.remaining(), 1e-3), "mip_rel_gap": 0.0, "presolve": True},
    )
    if res.status == 0:
        return _Milp("optimal", np.round(res.x).astype(int))
    if res.status == 2:
        return _Milp("infeasible", None)
    x = None if res.x is None else np.round(res.x).astype(int)
    return _Milp("timeout", x)


# ---- TSP -----------------------------------------------------------------------------------


def _solve_tsp(ir: GraphIR, g: _Indexed, opts: SolveOptions, dl: _Deadline) -> SolverResult:
    n = len(g.names)
    start = g.names.index(ir.parameters.get("start", g.names[0]))
    if n > opts.tsp_max_nodes:
        return _result(
            ir, "too_large", "none", None, None, f"{n} nodes is above the exact TSP cap of {opts.tsp_max_nodes}."
        )
    if n == 1:
        return _tsp_answer(ir, g, [start], "trivial", True, True)
    if not _tsp_possible(g, ir.directed):
        return _tsp_answer(ir, g, None, "degree/connectivity check", True, True)
    if n <= opts.held_karp_max_nodes:
        return _tsp_answer(ir, g, _held_karp(g, start), "held-karp", True, True)
    symmetric = all(g.weight.get((j, i)) == w for (i, j), w in g.weight.items())
    tour, status = _tsp_milp(g, start, ir.directed and not symmetric, dl)
    return _tsp_answer(ir, g, tour, "milp-highs (lazy DFJ subtour elimination)", status == "optimal", False)


def _tsp_possible(g: _Indexed, directed: bool) -> bool:
    """Cheap proofs that no Hamiltonian cycle exists: a node without two distinct neighbours
    (or an in-/out-arc), or a graph that is not strongly connected."""
    n = len(g.names)
    if directed:
        if any(not g.out[v] or not g.inn[v] for v in range(n)):
            return False
    elif n >= 3 and any(len(g.out[v]) < 2 for v in range(n)):
        return False
    for arcs in (g.out, g.inn):
        seen, stack = {0}, [0]
        while stack:
            for u, _ in arcs[stack.pop()]:
                if u not in seen:
                    seen.add(u)
                    stack.append(u)
        if len(seen) < n:
            return False
    return True


def _held_karp(g: _Indexed, start: int) -> list[int] | None:
    """Exact DP over subsets, cost-to-go form so the forward reconstruction can pick the
    lexicographically smallest next node among optimal continuations."""
    n = len(g.names)
    others = [v for v in range(n) if v != start]
    m = len(others)
    w = np.full((n, n), np.inf)
    for (i, j), c in g.weight.items():
        w[i, j] = c
    wo = w[np.ix_(others, others)]  # (m, m) between others
    full = (1 << m) - 1
    masks = np.arange(1 << m)
    member = ((masks[:, None] >> np.arange(m)[None, :]) & 1).astype(bool)
    h = np.full((1 << m, m), np.inf)  # h[mask, j]: from j, visit rest, return
    h[full] = w[others, start]
    popcount = member.sum(axis=1)
    for p in range(m - 1, 0, -1):
        level = masks[popcount == p]
        best = np.full((len(level), m), np.inf)
        for k in range(m):
            sel = ~member[level, k]
            if not sel.any():
                continue
            nxt = h[level[sel] | (1 << k), k]  # (s,)
            cand = wo[:, k][None, :] + nxt[:, None]  # (s, m) over j
            best[sel] = np.minimum(best[sel], cand)
        best[~member[level]] = np.inf
        h[level] = best
    first = w[start, others] + h[1 << np.arange(m), np.arange(m)]
    remaining = float(first.min())
    if not math.isfinite(remaining):
        return None
    return _hk_reconstruct(g, start, others, w, h, remaining)


def _hk_reconstruct(
    g: _Indexed, start: int, others: list[int], w: np.ndarray, h: np.ndarray, remaining: float
) -> list[int]:
    tour, cur, mask = [start], start, 0
    for _ in others:
        for k, v in enumerate(others):
            if mask >> k & 1:
                continue
            step = w[cur, v] + h[mask | 1 << k, k]
            if math.isfinite(step) and g.arith.close(float(step), remaining):
                remaining, cur, mask = float(h[mask | 1 << k, k]), v, mask | 1 << k
                tour.append(v)
                break
    return tour + [start]


def _tsp_milp(g: _Indexed, start: int, directed: bool, dl: _Deadline) -> tuple[list[int] | None, str]:
    """DFJ formulation solved by HiGHS; violated subtour constraints are added lazily until the
    solution is one cycle. Undirected: one variable per edge, degree 2. Directed: one per arc,
    in/out-degree 1."""
    n = len(g.names)
    arcs = sorted(a for a in g.weight if directed or a[0] < a[1])
    cost = np.array([float(g.weight[a]) for a in arcs])
    rows, lo, hi = _tsp_degree_rows(n, arcs, directed)
    if directed:  # forbid 2-cycles up front
        pos = {a: k for k, a in enumerate(arcs)}
        for (i, j), k in pos.items():
            if i < j and (j, i) in pos:
                rows.append({k: 1.0, pos[j, i]: 1.0})
                lo.append(0.0)
                hi.append(1.0)
    var_lo, var_hi = np.zeros(len(arcs)), np.ones(len(arcs))
    _tsp_root_cuts(n, arcs, cost, rows, lo, hi, dl)
    while True:
        res = _run_milp(cost, rows, lo, hi, var_lo, var_hi, dl)
        if res.status == "infeasible":
            return None, "optimal"
        if res.x is None:
            return None, "timeout"
        chosen = [arcs[k] for k in range(len(arcs)) if res.x[k]]
        cycles = _cycles(n, chosen, directed)
        if len(cycles) == 1:  # a tour: optimal unless HiGHS stopped on the time limit
            return _orient(cycles[0], start, g, directed), res.status
        if res.status == "timeout":
            return None, "timeout"
        for cyc in cycles:
            _add_subtour_cut(set(cyc), arcs, rows, lo, hi)


def _add_subtour_cut(
    inside: set[int], arcs: list[tuple[int, int]], rows: list[dict[int, float]], lo: list[float], hi: list[float]
) -> None:
    """DFJ: at most |S| - 1 chosen arcs inside S (equivalent to the cut form given the degree
    rows)."""
    rows.append({k: 1.0 for k, (i, j) in enumerate(arcs) if i in inside and j in inside})
    lo.append(0.0)
    hi.append(len(inside) - 1.0)


def _tsp_root_cuts(
    n: int,
    arcs: list[tuple[int, int]],
    cost: np.ndarray,
    rows: list[dict[int, float]],
    lo: list[float],
    hi: list[float],
    dl: _Deadline,
    max_rounds: int = 100,
) -> None:
    """Strengthen the formulation before branching: solve the LP relaxation, add the subtour
    constraint of every disconnected support component or of a global minimum cut (Stoer–Wagner
    on x_ij + x_ji) below 2, repeat. Only adds valid inequalities, so optimality is unaffected."""
    for _ in range(max_rounds):
        if dl.remaining() < 0.5:
            return
        a = _rows_matrix(rows, len(arcs))
        res = linprog(
            cost, bounds=(0, 1), method="highs", options={"time_limit": dl.remaining()}, **_lp_constraints(a, lo, hi)
        )
        if res.status != 0:
            return
        support = nx.Graph()
        support.add_nodes_from(range(n))
        for k, (i, j) in enumerate(arcs):
            if res.x[k] > 1e-9:
                prev = support.get_edge_data(i, j, {"weight": 0.0})["weight"]
                support.add_edge(i, j, weight=prev + float(res.x[k]))
        parts = [set(c) for c in nx.connected_components(support)]
        if len(parts) == 1:
            value, (side, other) = nx.stoer_wagner(support)
            if value >= 2 - 1e-6:
                return
            parts = [set(side) if len(side) <= len(other) else set(other)]
        for part in parts:
            _add_subtour_cut(part, arcs, rows, lo, hi)


def _tsp_degree_rows(
    n: int, arcs: list[tuple[int, int]], directed: bool
) -> tuple[list[dict[int, float]], list[float], list[float]]:
    rows: list[dict[int, float]] = []
    if directed:
        outs: list[dict[int, float]] = [{} for _ in range(n)]
        ins: list[dict[int, float]] = [{} for _ in range(n)]
        for k, (i, j) in enumerate(arcs):
            outs[i][k] = 1.0
            ins[j][k] = 1.0
        rows = outs + ins
        return rows, [1.0] * len(rows), [1.0] * len(rows)
    deg: list[dict[int, float]] = [{} for _ in range(n)]
    for k, (i, j) in enumerate(arcs):
        deg[i][k] = 1.0
        deg[j][k] = 1.0
    return deg, [2.0] * n, [2.0] * n


def _cycles(n: int, chosen: list[tuple[int, int]], directed: bool) -> list[list[int]]:
    nbrs: list[list[int]] = [[] for _ in range(n)]
    for i, j in chosen:
        nbrs[i].append(j)
        if not directed:
            nbrs[j].append(i)
    seen: set[int] = set()
    cycles = []
    for s in range(n):
        if s in seen:
            continue
        cyc, prev, cur = [s], -1, s
        seen.add(s)
        while True:
            nxt = next((u for u in nbrs[cur] if u != prev), nbrs[cur][0]) if not directed else nbrs[cur][0]
            if nxt == s:
                break
            cyc.append(nxt)
            seen.add(nxt)
            prev, cur = cur, nxt
        cycles.append(cyc)
    return cycles


def _orient(cycle: list[int], start: int, g: _Indexed, directed: bool) -> list[int]:
    k = cycle.index(start)
    seq = cycle[k:] + cycle[:k]
    if not directed and len(seq) > 2 and seq[-1] < seq[1]:
        seq = [seq[0]] + seq[:0:-1]
    return seq + [start]


def _tsp_answer(
    ir: GraphIR, g: _Indexed, tour: list[int] | None, method: str, optimal: bool, canonical: bool
) -> SolverResult:
    start = ir.parameters.get("start", g.names[0])
    if tour is None and optimal:
        ans = TSPAnswer(start, False, [], None, canonical, g.arith.exact)
        return _result(ir, "no_solution", method, True, ans, "No tour: the graph has no Hamiltonian cycle.")
    if tour is None:
        return _result(ir, "timeout", method, False, None, "Time budget spent before a tour was found.")
    total = g.arith.report(sum(g.weight[a, b] for a, b in zip(tour, tour[1:])))
    names = [g.names[v] for v in tour]
    ans = TSPAnswer(start, True, names, total, canonical, g.arith.exact)
    if not optimal:
        return _result(
            ir,
            "timeout",
            method,
            False,
            ans,
            f"Time budget spent: best tour found has total weight {total} (not proven optimal).",
        )
    return _result(ir, "ok", method, True, ans, f"Optimal tour {' -> '.join(names)}, total weight {total}.")
