"""Shared solver helpers: the indexed view of a :class:`GraphIR` (nodes as ``0..n-1``, exact
or tolerant arithmetic), the time budget, bit iteration and the result constructor."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal

from components.tools.graph_ir.ir import MAX_WEIGHT_DECIMALS, GraphIR, Number
from components.tools.graph_ir.results import Answer, SolveOptions, SolverResult


@dataclass(frozen=True)
class _Arith:
    """Exact (integer-scaled) or tolerant float arithmetic for one graph."""

    exact: bool
    scale: int

    def close(self, a: float, b: float) -> bool:
        if self.exact:
            return a == b
        return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))

    def report(self, total: float) -> Number:
        if self.exact:
            total = int(total)
            return total if self.scale == 1 else float(Decimal(total) / Decimal(self.scale))
        return float(f"{total:.12g}")


@dataclass
class _Indexed:
    """Nodes as ``0..n-1`` in natural order; arcs with (possibly scaled) weights."""

    names: list[str]
    arith: _Arith
    weight: dict[tuple[int, int], Number]  # both directions for undirected graphs
    out: list[list[tuple[int, Number]]]  # sorted by neighbour index
    inn: list[list[tuple[int, Number]]]
    und: list[int]  # bitmask adjacency of the simple graph


def _arith_for(ir: GraphIR) -> tuple[_Arith, list[Number]]:
    raw = [w for _, _, w in ir.edges]
    decimals = 0
    for w in raw:
        if isinstance(w, float):
            decimals = max(decimals, -min(0, Decimal(repr(w)).as_tuple().exponent))  # type: ignore[operator]
    if decimals <= MAX_WEIGHT_DECIMALS:
        scale = 10**decimals
        scaled = [int(Decimal(repr(w) if isinstance(w, float) else w) * scale) for w in raw]
        if max((abs(w) for w in scaled), default=0) * (len(ir.nodes) + 1) < 2**53:
            return _Arith(True, scale), list(scaled)
    return _Arith(False, 1), [float(w) for w in raw]


def _index(ir: GraphIR) -> _Indexed:
    names = list(ir.nodes)
    pos = {n: i for i, n in enumerate(names)}
    arith, weights = _arith_for(ir)
    weight: dict[tuple[int, int], Number] = {}
    for (u, v, _), w in zip(ir.edges, weights):
        weight[pos[u], pos[v]] = w
        if not ir.directed:
            weight[pos[v], pos[u]] = w
    n = len(names)
    out: list[list[tuple[int, Number]]] = [[] for _ in range(n)]
    inn: list[list[tuple[int, Number]]] = [[] for _ in range(n)]
    und = [0] * n
    for (i, j), w in sorted(weight.items()):
        out[i].append((j, w))
        inn[j].append((i, w))
        und[i] |= 1 << j
        und[j] |= 1 << i
    return _Indexed(names, arith, weight, out, inn, und)


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + max(0.0, seconds)

    def remaining(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.end


class _Timeout(Exception):
    pass


SolverFn = Callable[[GraphIR, _Indexed, SolveOptions, _Deadline], SolverResult]


def _result(
    ir: GraphIR, status: str, method: str, optimal: bool | None, answer: Answer | None, summary: str
) -> SolverResult:
    return SolverResult(ir.problem_type, status, method, optimal, answer, summary, ir.warnings)


def _bits(mask: int) -> Iterable[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low
