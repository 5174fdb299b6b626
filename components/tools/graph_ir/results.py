"""What the solvers return: one answer dataclass per task, :class:`SolverResult`, and the
budgets in :class:`SolveOptions`."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Union

from components.tools.graph_ir.ir import (
    DEFAULT_TIME_LIMIT_S,
    HELD_KARP_MAX_NODES,
    TSP_MAX_NODES,
    Number,
)


@dataclass(frozen=True)
class ShortestPathAnswer:
    source: str
    target: str
    reachable: bool
    path: list[str]
    total_weight: Number | None
    num_edges: int | None
    exact_arithmetic: bool = True


@dataclass(frozen=True)
class ColoringAnswer:
    num_colors: int
    coloring: dict[str, int]
    color_classes: list[list[str]]
    lower_bound: int


@dataclass(frozen=True)
class TSPAnswer:
    start: str
    tour_exists: bool
    tour: list[str]
    total_weight: Number | None
    canonical: bool
    exact_arithmetic: bool = True


@dataclass(frozen=True)
class VertexCoverAnswer:
    size: int
    cover: list[str]
    lower_bound: int
    canonical: bool


@dataclass(frozen=True)
class BFSAnswer:
    source: str
    order: list[str]
    layers: list[list[str]]
    unreached: list[str]


@dataclass(frozen=True)
class CentralityAnswer:
    kind: str
    scores: dict[str, float]
    max_score: float
    max_nodes: list[str]
    top_k: list[list[Any]] | None = None
    requested: dict[str, float] | None = None


Answer = Union[ShortestPathAnswer, ColoringAnswer, TSPAnswer, VertexCoverAnswer, BFSAnswer, CentralityAnswer]


@dataclass(frozen=True)
class SolverResult:
    """One solver run.

    ``status``: ``ok`` (answered; ``optimal`` says whether optimality is proven — ``None`` for
    tasks that are not optimisation problems), ``no_solution`` (proven: target unreachable, no
    Hamiltonian cycle; ``answer`` says so explicitly), ``timeout`` (budget spent; ``answer`` holds
    the best solution found, if any, with ``optimal: false``), ``too_large`` (over a task cap).
    ``elapsed_s`` is excluded from equality and, by default, from the JSON.
    """

    problem_type: str
    status: str
    method: str
    optimal: bool | None
    answer: Answer | None
    summary: str
    warnings: tuple[str, ...] = ()
    elapsed_s: float = field(default=0.0, compare=False)

    def to_dict(self, include_timing: bool = False) -> dict[str, Any]:
        d = asdict(self)
        d["warnings"] = list(self.warnings)
        if not include_timing:
            d.pop("elapsed_s")
        return d

    def to_json(self, include_timing: bool = False) -> str:
        return json.dumps(self.to_dict(include_timing), ensure_ascii=False)


@dataclass(frozen=True)
class SolveOptions:
    """Budgets and caps. ``time_limit_s`` bounds one :func:`solve` call (MILP and branch and
    bound check it; the polynomial tasks are far below it at :data:`MAX_NODES`)."""

    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    held_karp_max_nodes: int = HELD_KARP_MAX_NODES
    tsp_max_nodes: int = TSP_MAX_NODES
