"""Exact maximum clique (bitset branch and bound), shared by vertex cover and as the
colouring lower bound."""

from __future__ import annotations

from components.tools.graph_ir._common import _bits, _Deadline, _Timeout


class _Found(Exception):
    pass


class _MaxClique:
    """Exact maximum clique by bitset branch and bound (Tomita–Seki MCQ: greedy colouring bound,
    vertices renumbered by non-increasing degree; San Segundo's bitset encoding).

    ``find(cand)`` returns a maximum clique inside the vertex set ``cand`` (a bitmask of original
    indices); ``find(cand, target)`` returns the first clique of size >= ``target`` or ``None``.
    Raises :class:`_Timeout` when the deadline passes; ``best`` then holds the incumbent.
    """

    CHECK_EVERY = 1024

    def __init__(self, adj: list[int], deadline: _Deadline) -> None:
        n = len(adj)
        self.deadline = deadline
        self.old = sorted(range(n), key=lambda v: (-adj[v].bit_count(), v))  # new -> old
        new = {v: i for i, v in enumerate(self.old)}
        self.adj = [sum(1 << new[u] for u in _bits(adj[v])) for v in self.old]
        self.to_new = new
        self.best: list[int] = []
        self.nodes = 0

    def find(self, cand: int, target: int = 0) -> list[int] | None:
        p = sum(1 << self.to_new[v] for v in _bits(cand))
        self.best, self.best_size, self.target = [], max(0, target - 1), target
        try:
            self._expand([], p)
        except _Found:
            pass
        if target and len(self.best) < target:
            return None
        return sorted(self.old[v] for v in self.best)

    def _color_sort(self, p: int) -> tuple[list[int], list[int]]:
        order: list[int] = []
        colors: list[int] = []
        k = 0
        while p:
            k += 1
            q = p
            while q:
                low = q & -q
                v = low.bit_length() - 1
                q &= ~(self.adj[v] | low)
                p ^= low
                order.append(v)
                colors.append(k)
        return order, colors

    def _expand(self, r: list[int], p: int) -> None:
        self.nodes += 1
        if self.nodes % self.CHECK_EVERY == 1 and self.deadline.expired():
            raise _Timeout
        order, colors = self._color_sort(p)
        for idx in range(len(order) - 1, -1, -1):
            if len(r) + colors[idx] <= self.best_size:
                return
            v = order[idx]
            r.append(v)
            sub = p & self.adj[v]
            if sub:
                self._expand(r, sub)
            elif len(r) > self.best_size:
                self.best, self.best_size = r[:], len(r)
                if self.target and self.best_size >= self.target:
                    raise _Found
            r.pop()
            p &= ~(1 << v)
