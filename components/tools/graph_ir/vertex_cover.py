"""Minimum vertex cover: a maximum clique of the complement graph, then the
lexicographically smallest minimum cover."""

from __future__ import annotations

from components.tools.graph_ir._common import (
    _bits,
    _Deadline,
    _Indexed,
    _result,
    _Timeout,
)
from components.tools.graph_ir.clique import _MaxClique
from components.tools.graph_ir.ir import GraphIR
from components.tools.graph_ir.results import (
    SolveOptions,
    SolverResult,
    VertexCoverAnswer,
)


def _solve_vertex_cover(ir: GraphIR, g: _Indexed, opts: SolveOptions, dl: _Deadline) -> SolverResult:
    """Minimum cover = complement of a maximum independent set = a maximum clique of the
    complement graph; then the lexicographically smallest minimum cover by greedy fixing."""
    n = len(g.names)
    everyone = (1 << n) - 1
    comp = [everyone & ~g.und[v] & ~(1 << v) for v in range(n)]
    clique = _MaxClique(comp, dl)
    try:
        indep = clique.find(everyone)
    except _Timeout:
        best = {clique.old[v] for v in clique.best}
        return _vc_result(ir, g, [v for v in range(n) if v not in best], "timeout", False, False)
    assert indep is not None
    cover, canonical = _lex_min_cover(n, comp, clique, set(indep))
    return _vc_result(ir, g, cover, "ok", True, canonical)


def _lex_min_cover(n: int, comp: list[int], clique: _MaxClique, indep: set[int]) -> tuple[list[int], bool]:
    """Greedy fixing in natural order: put node i in the cover whenever a maximum independent set
    avoiding i (and respecting the earlier decisions) still exists. The result is the
    lexicographically smallest minimum cover. ``indep`` is always a witness for the decisions."""
    need, cand = len(indep), (1 << n) - 1  # nodes that may still join the independent set
    chosen = 0  # nodes fixed into the independent set
    try:
        for i in range(n):
            if not cand >> i & 1:
                continue
            if i in indep:
                found = clique.find(cand & ~(1 << i), need)
                if found is None:  # i is in every remaining maximum set
                    chosen |= 1 << i
                    need -= 1
                    cand &= comp[i]
                    continue
                indep = set(found) | set(_bits(chosen))
            cand &= ~(1 << i)
    except _Timeout:
        return [v for v in range(n) if v not in indep], False
    return [v for v in range(n) if v not in indep], True


def _vc_result(ir: GraphIR, g: _Indexed, cover: list[int], status: str, optimal: bool, canonical: bool) -> SolverResult:
    names = [g.names[i] for i in cover]
    lower = len(names) if optimal else _matching_bound(g)
    ans = VertexCoverAnswer(len(names), names, lower, canonical)
    method = "max-clique-branch-and-bound (complement graph)"
    if optimal:
        return _result(ir, status, method, True, ans, f"Minimum vertex cover has {len(names)} nodes.")
    return _result(
        ir, status, method, False, ans, f"Time budget spent: best cover has {len(names)} nodes, lower bound {lower}."
    )


def _matching_bound(g: _Indexed) -> int:
    """Size of a maximal matching: every cover needs one endpoint of each matched edge."""
    used, size = 0, 0
    for i, j in sorted({(min(a, b), max(a, b)) for a, b in g.weight}):
        if not (used >> i & 1 or used >> j & 1):
            used |= (1 << i) | (1 << j)
            size += 1
    return size
