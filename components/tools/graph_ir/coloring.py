"""Minimum graph colouring: exact DSATUR branch and bound seeded with a maximum clique."""

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
from components.tools.graph_ir.results import ColoringAnswer, SolveOptions, SolverResult


def _greedy_clique(adj: list[int]) -> list[int]:
    """Largest clique among greedy cliques grown from every vertex (a valid lower bound)."""
    n, best = len(adj), [0] if adj else []
    deg = [a.bit_count() for a in adj]
    for v in sorted(range(n), key=lambda x: (-deg[x], x)):
        if deg[v] + 1 <= len(best):
            break
        clique, cand = [v], adj[v]
        while cand:
            u = max(_bits(cand), key=lambda x: ((adj[x] & cand).bit_count(), -x))
            clique.append(u)
            cand &= adj[u]
        if len(clique) > len(best):
            best = clique
    return sorted(best)


def _clique_bound(adj: list[int], deadline: _Deadline) -> list[int]:
    """A maximum clique (exact unless the deadline passes; then the best clique seen). The
    greedy high-degree clique is preferred when it is as large: pre-colouring high-degree
    vertices makes the DSATUR search markedly smaller on dense graphs."""
    greedy, search = _greedy_clique(adj), _MaxClique(adj, deadline)
    try:
        found = search.find((1 << len(adj)) - 1) or []
    except _Timeout:
        found = sorted(search.old[v] for v in search.best)
    return greedy if len(greedy) >= len(found) else found


class _DsaturBnB:
    """Exact colouring: DSATUR branch and bound (Brélaz 1979) seeded with a clique.

    Vertices of a maximum clique get colours ``0..ω-1`` (ω is also the lower bound); the search
    then always branches on the uncoloured vertex of maximum saturation (ties: most uncoloured
    neighbours, then lowest index), trying used colours in ascending order and one new colour
    while it can still beat the incumbent (initially the greedy DSATUR colouring). It stops as
    soon as the incumbent matches the clique bound, or when the search space is exhausted.
    """

    CHECK_EVERY = 1024
    _SAT, _DEG = 1 << 20, 1 << 10  # key = saturation | uncoloured degree | -index

    def __init__(self, adj: list[int], deadline: _Deadline) -> None:
        self.adj, self.n, self.deadline = adj, len(adj), deadline
        self.clique = _clique_bound(adj, deadline)
        self.lower = len(self.clique)
        self.best = _dsatur_greedy(adj)
        self.best_k = max(self.best, default=-1) + 1
        self.color = [-1] * self.n
        self.count = [[0] * (self.best_k + 1) for _ in range(self.n)]
        self.sat = [0] * self.n
        self.key = [a.bit_count() * self._DEG + (self._DEG - 1 - v) for v, a in enumerate(adj)]
        self.uncolored = (1 << self.n) - 1
        self.nodes = 0

    def run(self) -> bool:
        """Search; ``True`` if optimality was proven, ``False`` on timeout."""
        if self.best_k <= self.lower:
            return True
        for c, v in enumerate(self.clique):
            self._assign(v, c)
        try:
            self._search(len(self.clique), len(self.clique))
        except _Timeout:
            return False
        return True

    def _assign(self, v: int, c: int) -> None:
        self.color[v] = c
        self.uncolored &= ~(1 << v)
        bit, key, sat, count = 1 << c, self.key, self.sat, self.count
        for u in _bits(self.adj[v] & self.uncolored):
            if not count[u][c]:
                sat[u] |= bit
                key[u] += self._SAT
            count[u][c] += 1
            key[u] -= self._DEG

    def _unassign(self, v: int, c: int) -> None:
        bit, key, sat, count = 1 << c, self.key, self.sat, self.count
        for u in _bits(self.adj[v] & self.uncolored):
            count[u][c] -= 1
            if not count[u][c]:
                sat[u] &= ~bit
                key[u] -= self._SAT
            key[u] += self._DEG
        self.uncolored |= 1 << v
        self.color[v] = -1

    def _search(self, done: int, used: int) -> bool:
        self.nodes += 1
        if self.nodes % self.CHECK_EVERY == 1 and self.deadline.expired():
            raise _Timeout
        if done == self.n:
            self.best, self.best_k = self.color[:], used
            return used <= self.lower
        v = max(_bits(self.uncolored), key=self.key.__getitem__)
        for c in range(used + 1):
            if max(used, c + 1) >= self.best_k:  # cannot beat the (possibly improved) incumbent
                break
            if self.sat[v] >> c & 1:
                continue
            self._assign(v, c)
            finished = self._search(done + 1, max(used, c + 1))
            self._unassign(v, c)
            if finished:
                return True
        return False


def _dsatur_greedy(adj: list[int]) -> list[int]:
    n = len(adj)
    color, sat, unc = [-1] * n, [0] * n, (1 << n) - 1
    for _ in range(n):
        v = max(_bits(unc), key=lambda u: (sat[u].bit_count(), (adj[u] & unc).bit_count(), -u))
        c = 0
        while sat[v] >> c & 1:
            c += 1
        color[v] = c
        unc &= ~(1 << v)
        for u in _bits(adj[v] & unc):
            sat[u] |= 1 << c
    return color


def _canonical_colors(color: list[int]) -> list[int]:
    relabel: dict[int, int] = {}
    return [relabel.setdefault(c, len(relabel)) for c in color]


def _solve_coloring(ir: GraphIR, g: _Indexed, opts: SolveOptions, dl: _Deadline) -> SolverResult:
    search = _DsaturBnB(g.und, dl)
    proven = search.run()
    color = _canonical_colors(search.best)
    k = max(color) + 1
    classes = [[g.names[v] for v in range(len(color)) if color[v] == c] for c in range(k)]
    ans = ColoringAnswer(k, {g.names[v]: color[v] for v in range(len(color))}, classes, search.lower)
    method = "dsatur-branch-and-bound"
    if proven:
        return _result(ir, "ok", method, True, ans, f"Chromatic number {k}.")
    return _result(
        ir,
        "timeout",
        method,
        False,
        ans,
        f"Time budget spent: best colouring uses {k} colours, lower bound {search.lower}.",
    )
