"""GRAIN's graph-theory tool: a validated JSON graph IR and exact, deterministic solvers.

The agent writes a JSON query inside ``<graph>…</graph>`` (SPEC §2c, GRAIN Table 12)::

    {"problem_type": "shortest_path",
     "graph": {"type": "adjacency_list", "data": {"A": {"B": 3}, "B": {}},
               "directed": false, "weighted": true},
     "parameters": {"source": "A", "target": "B"}}

and the environment answers with :func:`run_graph_tool`'s ``<result>{json}</result>`` string.

Pipeline: :func:`parse_graph_ir` (text → :class:`GraphIR` | :class:`IRError`, never raises) →
:func:`solve` (→ :class:`SolverResult`, dispatched through :data:`SOLVERS`) →
:meth:`SolverResult.to_json`.

IR rules (all violations are an :class:`IRError` with a stable ``code``, see :data:`ERROR_CODES`):

* ``problem_type`` is matched case-insensitively, spaces/hyphens read as ``_``; aliases are in
  :data:`PROBLEM_ALIASES` (``betweenness_centrality`` etc. also imply the centrality kind).
* ``graph.type`` may be omitted; if present it must be ``adjacency_list``. ``directed`` and
  ``weighted`` are required JSON booleans. ``parameters`` may be omitted or ``null``.
* ``data`` maps node → ``{neighbour: weight}``; a node that only appears as a neighbour is a
  node too. For unweighted graphs a plain neighbour list is accepted and weights may be numbers
  or ``null``: every weight is 1 (a warning says so when given weights differ from 1).
  Weighted graphs need finite numeric weights of magnitude at most :data:`MAX_ABS_WEIGHT`
  (booleans are not numbers); integral floats are stored as ints (``7.0`` → ``7``).
* Node names are strings (JSON integers in neighbour lists / parameters become their decimal
  string); empty or whitespace-only names are rejected. Names are otherwise used verbatim.
* Undirected graphs are **symmetrised**: ``A: {B: 3}`` alone means the edge A–B of weight 3 (the
  GRAIN paper's own example lists each undirected edge once). Listing both directions is fine if
  the weights agree; different weights are ``conflicting_weights``.
* Duplicate JSON object keys are ``duplicate_key``; self-loops are ``self_loop`` (no GRIT task
  needs them and they make colouring infeasible).
* Negative weights are rejected where the task forbids them: ``shortest_path`` (Dijkstra) and
  weighted ``centrality``. TSP accepts them; colouring / vertex cover / BFS ignore weights.
* Caps: :data:`MAX_NODES` nodes, :data:`MAX_EDGES` edges, :data:`MAX_TEXT_CHARS` characters.

Tasks, methods and caps (``method`` and ``optimal`` are in every result; :class:`SolveOptions`
holds the budget, default :data:`DEFAULT_TIME_LIMIT_S` seconds per call):

* ``shortest_path`` (params ``source``/``target``; aliases ``start``/``end``, ``from``/``to``…):
  Dijkstra on (weight, hops) keys — exact, polynomial. Unreachable → ``status: no_solution``
  with ``reachable: false``.
* ``graph_coloring`` (minimum colouring; edge direction and weights ignored): exact DSATUR
  branch and bound seeded with a maximum clique (``dsatur-branch-and-bound``). Sparse to medium
  density 60-node graphs take milliseconds; dense ones (G(60, 0.5)) take seconds and may hit the
  budget → ``status: timeout`` with the best colouring and the clique lower bound.
* ``tsp`` (param ``start`` optional; a tour must use existing edges/arcs; negative weights
  allowed): Held–Karp DP up to :data:`HELD_KARP_MAX_NODES` nodes, then a DFJ MILP with
  LP-separated and lazily added subtour constraints solved by HiGHS (``scipy.optimize.milp``, gap
  0) up to :data:`TSP_MAX_NODES` nodes; above that ``status: too_large``. A digraph whose arcs
  all come in equal-weight pairs is solved with the (much faster) symmetric formulation;
  genuinely asymmetric 40–60-node instances take several seconds and may hit the budget. No Hamiltonian cycle →
  ``status: no_solution``, ``tour_exists: false``. A 1-node tour is ``[start]`` (weight 0); a
  2-node tour goes there and back.
* ``vertex_cover`` (minimum cardinality; direction and weights ignored): maximum independent
  set as a maximum clique of the complement (bitset branch and bound, Tomita–Seki colouring
  bound), ``max-clique-branch-and-bound (complement graph)``.
* ``bfs`` (param ``source``): visit order, layers, unreached nodes; follows out-arcs.
* ``centrality`` (params ``kind`` in :data:`CENTRALITY_KINDS` — default ``degree`` with a warning
  — optional ``top_k`` and ``nodes``): networkx's normalised definitions; betweenness and
  closeness read weights as distances, PageRank as strengths (α = 0.85), degree ignores them;
  closeness on digraphs uses incoming distances (networkx). Scores are rounded to
  :data:`SCORE_DECIMALS` decimals and the maximum is taken over the rounded scores.

Determinism. Nodes are ordered by :func:`natural_key` (digit runs compared numerically, the rest by
code point, the raw string as final tie-break); every solver works on that order, so the JSON
insertion order never changes a result. Tie-breaking per task:

* shortest path: minimum total weight, then fewest edges, then the lexicographically smallest
  node sequence (natural order).
* TSP (Held–Karp): the lexicographically smallest tour sequence starting at ``start`` (default:
  the first node) among optimal tours. TSP (MILP): the optimal tour HiGHS returns, oriented so
  that the second node is the smaller of ``start``'s two tour neighbours (``canonical: false``).
* vertex cover: the lexicographically smallest sorted node list among minimum covers
  (``canonical: true``; ``false`` only if the time budget ran out during that refinement).
* colouring: the partition the deterministic DSATUR branch and bound finds, with colours
  renumbered ``0, 1, …`` in order of first appearance over the naturally sorted nodes.
* BFS: neighbours are enqueued in natural order; centrality ties are listed in natural order.

Arithmetic. Weights with at most :data:`MAX_WEIGHT_DECIMALS` decimals (and small enough to stay
exact in float64) are scaled to integers, so optimal values and ties are exact; totals are
reported as ints when all weights are integral. Otherwise float arithmetic is used with a
relative tolerance of 1e-9 and the answer says ``exact_arithmetic: false``.
"""

from __future__ import annotations

import heapq
import json
import math
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from typing import Any, Union

import networkx as nx
import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp
from scipy.sparse import csr_array

__all__ = [
    "CENTRALITY_KINDS",
    "DEFAULT_TIME_LIMIT_S",
    "ERROR_CODES",
    "HELD_KARP_MAX_NODES",
    "MAX_ABS_WEIGHT",
    "MAX_EDGES",
    "MAX_NODES",
    "MAX_TEXT_CHARS",
    "MAX_WEIGHT_DECIMALS",
    "PROBLEM_ALIASES",
    "PROBLEM_TYPES",
    "SCORE_DECIMALS",
    "SOLVERS",
    "TSP_MAX_NODES",
    "BFSAnswer",
    "CentralityAnswer",
    "ColoringAnswer",
    "GraphIR",
    "IRError",
    "ShortestPathAnswer",
    "SolveOptions",
    "SolverResult",
    "TSPAnswer",
    "VertexCoverAnswer",
    "natural_key",
    "parse_graph_ir",
    "run_graph_tool",
    "graph_tool_result",
    "solve",
    "to_networkx",
    "validate_ir",
]

Number = Union[int, float]

MAX_TEXT_CHARS = 1_000_000
MAX_NODES = 200
MAX_EDGES = 5000
MAX_WEIGHT_DECIMALS = 6
MAX_ABS_WEIGHT = 1e12
SCORE_DECIMALS = 6
DEFAULT_TIME_LIMIT_S = 10.0
HELD_KARP_MAX_NODES = 16
TSP_MAX_NODES = 60

PROBLEM_TYPES = ("shortest_path", "graph_coloring", "tsp", "vertex_cover", "bfs", "centrality")

#: Accepted spellings (after lower-casing and mapping spaces/hyphens to ``_``) → canonical type.
PROBLEM_ALIASES: dict[str, str] = {
    **{a: "shortest_path" for a in ("shortest_path", "shortestpath", "dijkstra", "min_path",
                                      "minimum_path", "shortest_route", "minimum_cost_path")},
    **{a: "graph_coloring" for a in ("graph_coloring", "graph_colouring", "coloring", "colouring",
                                       "min_coloring", "minimum_coloring", "min_graph_coloring",
                                       "minimum_graph_coloring", "vertex_coloring",
                                       "node_coloring", "chromatic_number")},
    **{a: "tsp" for a in ("tsp", "traveling_salesman", "travelling_salesman",
                            "traveling_salesman_problem", "travelling_salesman_problem",
                            "traveling_salesperson", "travelling_salesperson")},
    **{a: "vertex_cover" for a in ("vertex_cover", "min_vertex_cover", "minimum_vertex_cover",
                                     "mvc", "node_cover")},
    **{a: "bfs" for a in ("bfs", "breadth_first_search", "bfs_order", "bfs_traversal",
                            "graph_traversal", "traversal", "breadth_first_traversal")},
    **{a: "centrality" for a in ("centrality", "node_centrality", "degree_centrality",
                                   "in_degree_centrality", "out_degree_centrality",
                                   "betweenness_centrality", "closeness_centrality", "pagerank",
                                   "page_rank")},
}

#: ``problem_type`` aliases that also fix the centrality kind.
_IMPLIED_KIND = {
    "degree_centrality": "degree", "in_degree_centrality": "in_degree",
    "out_degree_centrality": "out_degree", "betweenness_centrality": "betweenness",
    "closeness_centrality": "closeness", "pagerank": "pagerank", "page_rank": "pagerank",
}

CENTRALITY_KINDS = ("degree", "in_degree", "out_degree", "betweenness", "closeness", "pagerank")

ERROR_CODES = (
    "not_text",               # the input is not a string
    "no_graph_block",         # <graph> without </graph>, or an empty block
    "multiple_graph_blocks",  # more than one <graph> in one tool call
    "invalid_json",           # payload is not JSON
    "not_an_object",          # top level (or graph/data/parameters) is not a JSON object
    "duplicate_key",          # a JSON object repeats a key
    "missing_key",            # problem_type / graph / graph.data / directed / weighted missing
    "wrong_type",             # a key has the wrong JSON type
    "unsupported_format",     # graph.type other than adjacency_list
    "unknown_problem_type",
    "bad_node_name",
    "bad_weight",             # non-numeric, non-finite or boolean weight
    "negative_weight",
    "conflicting_weights",    # undirected edge listed twice with different weights
    "self_loop",
    "empty_graph",
    "too_large",
    "missing_parameter",
    "bad_parameter",
    "unknown_node",           # a parameter names a node that is not in the graph
    "internal_error",         # a bug: reported instead of raised
)


# --------------------------------------------------------------------------------------------
# Public data types
# --------------------------------------------------------------------------------------------


def natural_key(name: str) -> tuple[tuple[Any, ...], str]:
    """Sort key: digit runs compare numerically, the rest by code point; the raw string breaks ties.

    >>> sorted(["n10", "n2", "N1", "n02", "a"], key=natural_key)
    ['N1', 'a', 'n02', 'n2', 'n10']
    """
    parts = _DIGITS.split(name)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), name


_DIGITS = re.compile(r"(\d+)", re.ASCII)


@dataclass(frozen=True)
class IRError:
    """Why a tool call was rejected: a stable ``code`` (one of :data:`ERROR_CODES`) + a message."""

    code: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"status": "error", "code": self.code, "message": self.message}


@dataclass(frozen=True)
class GraphIR:
    """A validated, canonical graph IR.

    ``nodes`` are in :func:`natural_key` order; ``edges`` are ``(u, v, weight)`` sorted by that
    order, with ``u`` before ``v`` for undirected graphs; unweighted graphs carry weight 1.
    ``parameters`` use canonical names (``source``, ``target``, ``start``, ``kind``, ``top_k``,
    ``nodes``) with node names already checked against the graph.
    """

    problem_type: str
    nodes: tuple[str, ...]
    edges: tuple[tuple[str, str, Number], ...]
    directed: bool
    weighted: bool
    parameters: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The IR back in the tool's input format (canonical order, each undirected edge once)."""
        data: dict[str, dict[str, Number]] = {n: {} for n in self.nodes}
        for u, v, w in self.edges:
            data[u][v] = w
        return {
            "problem_type": self.problem_type,
            "graph": {"type": "adjacency_list", "data": data, "directed": self.directed,
                      "weighted": self.weighted},
            "parameters": dict(self.parameters),
        }


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


Answer = Union[ShortestPathAnswer, ColoringAnswer, TSPAnswer, VertexCoverAnswer, BFSAnswer,
               CentralityAnswer]


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


# --------------------------------------------------------------------------------------------
# Parsing and validation
# --------------------------------------------------------------------------------------------


class _IRFail(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.error = IRError(code, message)


_OPEN, _CLOSE = "<graph>", "</graph>"
_FENCE = re.compile(r"^```[A-Za-z]*\s*|\s*```$")


def parse_graph_ir(text: Any) -> GraphIR | IRError:
    """Parse a tool call: the JSON inside ``<graph>…</graph>`` (or bare JSON). Never raises.

    >>> ir = parse_graph_ir('<graph>{"problem_type": "bfs", "graph": {"type": "adjacency_list",'
    ...     ' "data": {"a": ["b", "c"]}, "directed": false, "weighted": false},'
    ...     ' "parameters": {"start": "a"}}</graph>')
    >>> ir.nodes, ir.edges, ir.parameters
    (('a', 'b', 'c'), (('a', 'b', 1), ('a', 'c', 1)), {'source': 'a'})
    >>> parse_graph_ir("<graph>{oops</graph>").code
    'invalid_json'
    """
    try:
        obj = _load_json(_extract_payload(text))
    except _IRFail as fail:
        return fail.error
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"
        return IRError("internal_error", f"{type(exc).__name__}: {exc}")
    return validate_ir(obj)


def validate_ir(obj: Any) -> GraphIR | IRError:
    """Validate an already-decoded IR object (a ``dict``). Never raises.

    >>> ir = validate_ir({"problem_type": "Vertex Cover", "graph": {"data": {"1": {"2": 1}},
    ...                   "directed": False, "weighted": False}})
    >>> ir.problem_type, ir.nodes
    ('vertex_cover', ('1', '2'))
    """
    try:
        return _validate(obj)
    except _IRFail as fail:
        return fail.error
    except RecursionError:
        return IRError("too_large", "the IR is nested too deeply")
    except Exception as exc:  # noqa: BLE001
        return IRError("internal_error", f"{type(exc).__name__}: {exc}")


def _extract_payload(text: Any) -> str:
    if not isinstance(text, str):
        raise _IRFail("not_text", f"expected text, got {type(text).__name__}")
    if len(text) > MAX_TEXT_CHARS:
        raise _IRFail("too_large", f"tool call longer than {MAX_TEXT_CHARS} characters")
    count = text.count(_OPEN)
    if count > 1:
        raise _IRFail("multiple_graph_blocks", f"{count} <graph> blocks; send one per call")
    if count == 1:
        start = text.index(_OPEN) + len(_OPEN)
        end = text.find(_CLOSE, start)
        if end < 0:
            raise _IRFail("no_graph_block", "<graph> is not closed by </graph>")
        text = text[start:end]
    payload = _FENCE.sub("", text.strip())
    if not payload:
        raise _IRFail("no_graph_block", "the <graph> block is empty")
    return payload


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _IRFail("duplicate_key", f"JSON object repeats the key {key!r}")
        out[key] = value
    return out


def _load_json(payload: str) -> Any:
    try:
        return json.loads(payload, object_pairs_hook=_no_duplicates)
    except _IRFail:
        raise
    except RecursionError as exc:
        raise _IRFail("too_large", "the IR is nested too deeply") from exc
    except ValueError as exc:  # JSONDecodeError and int-digit limits
        raise _IRFail("invalid_json", f"not valid JSON: {exc}") from exc


def _require(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise _IRFail("missing_key", f"missing key {where}{key!r}")
    return obj[key]


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _IRFail("not_an_object" if where != "parameters" else "wrong_type",
                      f"{where} must be a JSON object, got {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number",
            float: "number", type(None): "null"}.get(type(value), type(value).__name__)


def _flag(graph: Mapping[str, Any], key: str) -> bool:
    value = _require(graph, key, "graph.")
    if not isinstance(value, bool):
        raise _IRFail("wrong_type", f"graph.{key} must be true or false, got {_json_type(value)}")
    return value


def _canonical_token(value: str) -> str:
    return re.sub(r"[\s\-]+", "_", value.strip().lower())


def _problem_type(raw: Any) -> tuple[str, str | None]:
    if not isinstance(raw, str):
        raise _IRFail("wrong_type", f"problem_type must be a string, got {_json_type(raw)}")
    token = _canonical_token(raw)
    if token not in PROBLEM_ALIASES:
        raise _IRFail("unknown_problem_type",
                      f"unknown problem_type {raw!r}; supported: {', '.join(PROBLEM_TYPES)}")
    return PROBLEM_ALIASES[token], _IMPLIED_KIND.get(token)


def _validate(obj: Any) -> GraphIR:
    top = _object(obj, "the IR")
    ptype, implied_kind = _problem_type(_require(top, "problem_type", ""))
    graph = _object(_require(top, "graph", ""), "graph")
    fmt = graph.get("type", "adjacency_list")
    if not isinstance(fmt, str) or _canonical_token(fmt) != "adjacency_list":
        raise _IRFail("unsupported_format", f"graph.type must be 'adjacency_list', got {fmt!r}")
    directed, weighted = _flag(graph, "directed"), _flag(graph, "weighted")
    data = _object(_require(graph, "data", "graph."), "graph.data")
    raw_params = top.get("parameters")
    params = {} if raw_params is None else _object(raw_params, "parameters")
    warnings: list[str] = []
    nodes, edges = _parse_adjacency(data, directed, weighted, warnings)
    _check_graph(ptype, nodes, edges, weighted, params, implied_kind)
    canonical = _PARAM_RULES[ptype](params, set(nodes), implied_kind, warnings)
    extra = sorted(set(params) - _consumed(ptype) - {"algorithm", "method"})
    if extra:
        warnings.append(f"ignored parameters: {', '.join(map(repr, extra))}")
    return GraphIR(ptype, nodes, edges, directed, weighted, canonical, tuple(warnings))


def _node_name(raw: Any, where: str) -> str:
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        raise _IRFail("bad_node_name", f"{where}: node names are strings, got {_json_type(raw)}")
    name = str(raw)
    if not name.strip():
        raise _IRFail("bad_node_name", f"{where}: empty node name")
    return name


def _weight(raw: Any, weighted: bool, edge: str, odd: list[bool]) -> Number:
    numeric = isinstance(raw, (int, float)) and not isinstance(raw, bool)
    if numeric and not (math.isfinite(raw) and abs(raw) <= MAX_ABS_WEIGHT):
        raise _IRFail("bad_weight", f"edge {edge}: weight {raw!r} is not a finite number of "
                      f"magnitude at most {MAX_ABS_WEIGHT:g}")
    if weighted:
        if not numeric:
            raise _IRFail("bad_weight", f"edge {edge}: weight must be a number, got {raw!r}")
        return int(raw) if isinstance(raw, float) and raw.is_integer() else raw
    if raw is not None and not numeric:
        raise _IRFail("bad_weight", f"edge {edge}: weight must be a number or null, got {raw!r}")
    if numeric and raw != 1:
        odd[0] = True
    return 1


def _neighbour_items(u: str, nbrs: Any, weighted: bool) -> Iterable[tuple[Any, Any]]:
    if nbrs is None:
        return ()
    if isinstance(nbrs, dict):
        return nbrs.items()
    if isinstance(nbrs, list):
        if weighted:
            raise _IRFail("bad_weight", f"node {u!r}: a weighted graph needs {{neighbour: weight}}")
        seen: set[str] = set()
        for v in nbrs:
            key = _node_name(v, f"neighbours of {u!r}")
            if key in seen:
                raise _IRFail("duplicate_key", f"node {u!r} lists neighbour {key!r} twice")
            seen.add(key)
        return ((v, None) for v in nbrs)
    raise _IRFail("wrong_type", f"neighbours of {u!r} must be an object, got {_json_type(nbrs)}")


def _parse_adjacency(data: Mapping[str, Any], directed: bool, weighted: bool,
                     warnings: list[str]) -> tuple[tuple[str, ...], tuple[tuple[str, str, Number], ...]]:
    nodes: set[str] = set()
    edges: dict[tuple[str, str], Number] = {}
    odd = [False]
    for raw_u, nbrs in data.items():
        u = _node_name(raw_u, "graph.data")
        nodes.add(u)
        if len(nodes) > MAX_NODES:
            raise _IRFail("too_large", f"graph exceeds {MAX_NODES} nodes / {MAX_EDGES} edges")
        for raw_v, raw_w in _neighbour_items(u, nbrs, weighted):
            v = _node_name(raw_v, f"neighbours of {u!r}")
            w = _weight(raw_w, weighted, f"{u!r}->{v!r}", odd)
            if u == v:
                raise _IRFail("self_loop", f"self-loop on {u!r} is not allowed")
            key = (u, v) if directed else tuple(sorted((u, v), key=natural_key))
            if key in edges and edges[key] != w:
                raise _IRFail("conflicting_weights",
                              f"undirected edge {key[0]!r}-{key[1]!r} has weights {edges[key]!r} "
                              f"and {w!r}")
            edges[key] = w
            nodes.add(v)
            if len(edges) > MAX_EDGES or len(nodes) > MAX_NODES:
                raise _IRFail("too_large", f"graph exceeds {MAX_NODES} nodes / {MAX_EDGES} edges")
    if odd[0]:
        warnings.append("weighted is false: the given edge weights were ignored (all weights 1)")
    ordered = tuple(sorted(nodes, key=natural_key))
    rank = {n: i for i, n in enumerate(ordered)}
    edge_list = sorted(((u, v, w) for (u, v), w in edges.items()), key=lambda e: (rank[e[0]], rank[e[1]]))
    return ordered, tuple(edge_list)


def _check_graph(ptype: str, nodes: tuple[str, ...], edges: tuple[tuple[str, str, Number], ...],
                 weighted: bool, params: Mapping[str, Any], implied_kind: str | None) -> None:
    if not nodes:
        raise _IRFail("empty_graph", "the graph has no nodes")
    if not weighted or ptype not in ("shortest_path", "centrality"):
        return
    if ptype == "centrality" and _peek_kind(params, implied_kind) in ("degree", "in_degree", "out_degree"):
        return
    for u, v, w in edges:
        if w < 0:
            raise _IRFail("negative_weight", f"edge {u!r}-{v!r} has negative weight {w!r}; "
                          f"{ptype} needs non-negative weights")


# ---- parameters --------------------------------------------------------------------------

_SOURCE_KEYS = ("source", "start", "from", "src", "source_node", "start_node", "origin", "begin")
_TARGET_KEYS = ("target", "end", "to", "dst", "target_node", "end_node", "destination", "goal")
_TSP_START_KEYS = ("start", "source", "start_node", "source_node", "origin", "from", "begin")
_KIND_KEYS = ("kind", "centrality", "centrality_type", "measure", "metric", "type")
_LENIENT_KIND_KEYS = ("algorithm", "method")  # used as the kind only when they name one
_TOPK_KEYS = ("top_k", "topk", "k", "top")
_NODES_KEYS = ("nodes", "node", "query_nodes", "target_nodes")
_MISSING = object()


def _take(params: Mapping[str, Any], keys: tuple[str, ...], norm: Callable[[Any, str], Any]) -> Any:
    """The value under the first present alias; aliases that disagree are an error."""
    found = [(k, norm(params[k], k)) for k in keys if k in params and params[k] is not None]
    if not found:
        return _MISSING
    values = {json.dumps(v, sort_keys=True) for _, v in found}
    if len(values) > 1:
        raise _IRFail("bad_parameter", f"parameters {', '.join(k for k, _ in found)} disagree")
    return found[0][1]


def _node_param(known: set[str]) -> Callable[[Any, str], str]:
    def norm(raw: Any, key: str) -> str:
        if isinstance(raw, bool) or not isinstance(raw, (str, int)):
            raise _IRFail("bad_parameter", f"parameter {key!r} must be a node name")
        name = str(raw)
        if name not in known:
            raise _IRFail("unknown_node", f"parameter {key!r} names {name!r}, not a node of the graph")
        return name
    return norm


def _required_node(params: Mapping[str, Any], keys: tuple[str, ...], known: set[str]) -> str:
    value = _take(params, keys, _node_param(known))
    if value is _MISSING:
        raise _IRFail("missing_parameter", f"parameter {keys[0]!r} (a node name) is required")
    return value


def _params_shortest_path(params: Mapping[str, Any], known: set[str], _kind: str | None,
                          _w: list[str]) -> dict[str, Any]:
    return {"source": _required_node(params, _SOURCE_KEYS, known),
            "target": _required_node(params, _TARGET_KEYS, known)}


def _params_bfs(params: Mapping[str, Any], known: set[str], _kind: str | None,
                _w: list[str]) -> dict[str, Any]:
    return {"source": _required_node(params, _SOURCE_KEYS, known)}


def _params_tsp(params: Mapping[str, Any], known: set[str], _kind: str | None,
                _w: list[str]) -> dict[str, Any]:
    start = _take(params, _TSP_START_KEYS, _node_param(known))
    return {} if start is _MISSING else {"start": start}


def _params_none(params: Mapping[str, Any], known: set[str], _kind: str | None,
                 _w: list[str]) -> dict[str, Any]:
    return {}


def _kind_value(raw: Any, key: str) -> str | None:
    """Normalised centrality kind, or ``None`` for an ``algorithm`` value that is not a kind."""
    token = _canonical_token(raw) if isinstance(raw, str) else ""
    token = re.sub(r"_?centrality$", "", token)
    token = {"page_rank": "pagerank", "indegree": "in_degree", "outdegree": "out_degree",
             "in": "in_degree", "out": "out_degree"}.get(token, token)
    if token in CENTRALITY_KINDS:
        return token
    if key in _LENIENT_KIND_KEYS:
        return None
    raise _IRFail("bad_parameter", f"unknown centrality kind {raw!r}; use one of "
                  f"{', '.join(CENTRALITY_KINDS)}")


def _peek_kind(params: Mapping[str, Any], implied: str | None) -> str | None:
    try:
        return _centrality_kind(params, implied)
    except _IRFail:
        return None


def _centrality_kind(params: Mapping[str, Any], implied: str | None) -> str | None:
    kind = _take(params, _KIND_KEYS, _kind_value)
    for key in _LENIENT_KIND_KEYS:
        if kind is _MISSING and isinstance(params.get(key), str):
            kind = _kind_value(params[key], key) or _MISSING
    if kind is not _MISSING and implied is not None and kind != implied:
        raise _IRFail("bad_parameter", f"problem_type implies {implied!r} but parameters ask {kind!r}")
    return implied if kind is _MISSING else kind


def _top_k(raw: Any, key: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise _IRFail("bad_parameter", f"parameter {key!r} must be a positive integer")
    return raw


def _params_centrality(params: Mapping[str, Any], known: set[str], implied: str | None,
                       warnings: list[str]) -> dict[str, Any]:
    kind = _centrality_kind(params, implied)
    if kind is None:
        kind = "degree"
        warnings.append("no centrality kind given: using degree centrality")
    out: dict[str, Any] = {"kind": kind}
    top_k = _take(params, _TOPK_KEYS, _top_k)
    if top_k is not _MISSING:
        out["top_k"] = top_k
    norm = _node_param(known)
    requested = _take(params, _NODES_KEYS,
                      lambda raw, key: [norm(x, key) for x in (raw if isinstance(raw, list) else [raw])])
    if requested is not _MISSING:
        out["nodes"] = sorted(set(requested), key=natural_key)
    return out


_PARAM_RULES: dict[str, Callable[[Mapping[str, Any], set[str], str | None, list[str]], dict[str, Any]]] = {
    "shortest_path": _params_shortest_path,
    "graph_coloring": _params_none,
    "tsp": _params_tsp,
    "vertex_cover": _params_none,
    "bfs": _params_bfs,
    "centrality": _params_centrality,
}

_PARAM_KEYS: dict[str, tuple[str, ...]] = {
    "shortest_path": _SOURCE_KEYS + _TARGET_KEYS,
    "bfs": _SOURCE_KEYS,
    "tsp": _TSP_START_KEYS,
    "centrality": _KIND_KEYS + _TOPK_KEYS + _NODES_KEYS,
}


def _consumed(ptype: str) -> set[str]:
    return set(_PARAM_KEYS.get(ptype, ()))


# --------------------------------------------------------------------------------------------
# networkx view and indexed view
# --------------------------------------------------------------------------------------------


def to_networkx(ir: GraphIR) -> nx.Graph | nx.DiGraph:
    """The IR as a networkx graph (``weight`` attribute on every edge; nodes and edges added in
    natural order so that networkx's own iteration order is canonical too).

    >>> g = to_networkx(validate_ir({"problem_type": "bfs", "graph": {"data": {"b": {"a": 2}},
    ...     "directed": True, "weighted": True}, "parameters": {"source": "a"}}))
    >>> list(g.edges(data=True))
    [('b', 'a', {'weight': 2})]
    """
    g: nx.Graph | nx.DiGraph = nx.DiGraph() if ir.directed else nx.Graph()
    g.add_nodes_from(ir.nodes)
    g.add_weighted_edges_from(ir.edges)
    return g


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
    weight: dict[tuple[int, int], Number]            # both directions for undirected graphs
    out: list[list[tuple[int, Number]]]              # sorted by neighbour index
    inn: list[list[tuple[int, Number]]]
    und: list[int]                                   # bitmask adjacency of the simple graph


def _arith_for(ir: GraphIR) -> tuple[_Arith, list[Number]]:
    raw = [w for _, _, w in ir.edges]
    decimals = 0
    for w in raw:
        if isinstance(w, float):
            decimals = max(decimals, -min(0, Decimal(repr(w)).as_tuple().exponent))  # type: ignore[operator]
    if decimals <= MAX_WEIGHT_DECIMALS:
        scale = 10 ** decimals
        scaled = [int(Decimal(repr(w) if isinstance(w, float) else w) * scale) for w in raw]
        if max((abs(w) for w in scaled), default=0) * (len(ir.nodes) + 1) < 2 ** 53:
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


# --------------------------------------------------------------------------------------------
# Solvers
# --------------------------------------------------------------------------------------------

SolverFn = Callable[[GraphIR, _Indexed, SolveOptions, _Deadline], SolverResult]


def _result(ir: GraphIR, status: str, method: str, optimal: bool | None, answer: Answer | None,
            summary: str) -> SolverResult:
    return SolverResult(ir.problem_type, status, method, optimal, answer, summary, ir.warnings)


# ---- shortest path -------------------------------------------------------------------------


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
        v = next(u for u, w in g.out[v]
                 if u in dist and dist[u][1] == h - 1 and g.arith.close(w + dist[u][0], d))
        path.append(v)
    total = g.arith.report(dist[s][0])
    names = [g.names[i] for i in path]
    ans = ShortestPathAnswer(src, dst, True, names, total, len(path) - 1, g.arith.exact)
    return _result(ir, "ok", method, True, ans,
                   f"Shortest path {' -> '.join(names)}, total weight {total}.")


# ---- BFS -----------------------------------------------------------------------------------


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
    return _result(ir, "ok", "bfs (neighbours in natural order)", None, ans,
                   f"BFS order from {g.names[s]}: {', '.join(names)}.")


# ---- centrality ----------------------------------------------------------------------------


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
        kind, scores, best, top,
        [[n, scores[n]] for n in ranked[:k]] if k else None,
        {n: scores[n] for n in ir.parameters["nodes"]} if "nodes" in ir.parameters else None,
    )
    method = f"networkx-{kind.replace('_', '-')}-centrality" if kind != "pagerank" else "networkx-pagerank"
    return _result(ir, "ok", method, None, ans,
                   f"Highest {kind} centrality {best}: {', '.join(top)}.")


# ---- graph colouring -----------------------------------------------------------------------


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


def _bits(mask: int) -> Iterable[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class _DsaturBnB:
    """Exact colouring: DSATUR branch and bound (Brélaz 1979) seeded with a clique.

    Vertices of a maximum clique get colours ``0..ω-1`` (ω is also the lower bound); the search
    then always branches on the uncoloured vertex of maximum saturation (ties: most uncoloured
    neighbours, then lowest index), trying used colours in ascending order and one new colour
    while it can still beat the incumbent (initially the greedy DSATUR colouring). It stops as
    soon as the incumbent matches the clique bound, or when the search space is exhausted.
    """

    CHECK_EVERY = 1024
    _SAT, _DEG = 1 << 20, 1 << 10          # key = saturation | uncoloured degree | -index

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
    return _result(ir, "timeout", method, False, ans,
                   f"Time budget spent: best colouring uses {k} colours, lower bound {search.lower}.")


# ---- MILP helper ---------------------------------------------------------------------------


@dataclass
class _Milp:
    status: str          # optimal | infeasible | timeout
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


def _run_milp(cost: np.ndarray, rows: list[dict[int, float]], lo: list[float], hi: list[float],
              var_lo: np.ndarray, var_hi: np.ndarray, dl: _Deadline) -> _Milp:
    """Binary MILP with HiGHS (scipy), gap 0, under the remaining time budget."""
    if dl.expired():
        return _Milp("timeout", None)
    n = len(cost)
    constraints = [LinearConstraint(_rows_matrix(rows, n), lo, hi)] if rows else []
    res = milp(cost, integrality=np.ones(n), bounds=Bounds(var_lo, var_hi), constraints=constraints,
               options={"time_limit": max(dl.remaining(), 1e-3), "mip_rel_gap": 0.0,
                        "presolve": True})
    if res.status == 0:
        return _Milp("optimal", np.round(res.x).astype(int))
    if res.status == 2:
        return _Milp("infeasible", None)
    x = None if res.x is None else np.round(res.x).astype(int)
    return _Milp("timeout", x)


# ---- maximum clique (used by vertex cover and as the colouring lower bound) ---------------


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
        self.old = sorted(range(n), key=lambda v: (-adj[v].bit_count(), v))   # new -> old
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


# ---- vertex cover --------------------------------------------------------------------------


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


def _lex_min_cover(n: int, comp: list[int], clique: _MaxClique, indep: set[int]
                   ) -> tuple[list[int], bool]:
    """Greedy fixing in natural order: put node i in the cover whenever a maximum independent set
    avoiding i (and respecting the earlier decisions) still exists. The result is the
    lexicographically smallest minimum cover. ``indep`` is always a witness for the decisions."""
    need, cand = len(indep), (1 << n) - 1       # nodes that may still join the independent set
    chosen = 0                                  # nodes fixed into the independent set
    try:
        for i in range(n):
            if not cand >> i & 1:
                continue
            if i in indep:
                found = clique.find(cand & ~(1 << i), need)
                if found is None:                 # i is in every remaining maximum set
                    chosen |= 1 << i
                    need -= 1
                    cand &= comp[i]
                    continue
                indep = set(found) | set(_bits(chosen))
            cand &= ~(1 << i)
    except _Timeout:
        return [v for v in range(n) if v not in indep], False
    return [v for v in range(n) if v not in indep], True


def _vc_result(ir: GraphIR, g: _Indexed, cover: list[int], status: str, optimal: bool,
               canonical: bool) -> SolverResult:
    names = [g.names[i] for i in cover]
    lower = len(names) if optimal else _matching_bound(g)
    ans = VertexCoverAnswer(len(names), names, lower, canonical)
    method = "max-clique-branch-and-bound (complement graph)"
    if optimal:
        return _result(ir, status, method, True, ans, f"Minimum vertex cover has {len(names)} nodes.")
    return _result(ir, status, method, False, ans,
                   f"Time budget spent: best cover has {len(names)} nodes, lower bound {lower}.")


def _matching_bound(g: _Indexed) -> int:
    """Size of a maximal matching: every cover needs one endpoint of each matched edge."""
    used, size = 0, 0
    for i, j in sorted({(min(a, b), max(a, b)) for a, b in g.weight}):
        if not (used >> i & 1 or used >> j & 1):
            used |= (1 << i) | (1 << j)
            size += 1
    return size


# ---- TSP -----------------------------------------------------------------------------------


def _solve_tsp(ir: GraphIR, g: _Indexed, opts: SolveOptions, dl: _Deadline) -> SolverResult:
    n = len(g.names)
    start = g.names.index(ir.parameters.get("start", g.names[0]))
    if n > opts.tsp_max_nodes:
        return _result(ir, "too_large", "none", None, None,
                       f"{n} nodes is above the exact TSP cap of {opts.tsp_max_nodes}.")
    if n == 1:
        return _tsp_answer(ir, g, [start], "trivial", True, True)
    if not _tsp_possible(g, ir.directed):
        return _tsp_answer(ir, g, None, "degree/connectivity check", True, True)
    if n <= opts.held_karp_max_nodes:
        return _tsp_answer(ir, g, _held_karp(g, start), "held-karp", True, True)
    symmetric = all(g.weight.get((j, i)) == w for (i, j), w in g.weight.items())
    tour, status = _tsp_milp(g, start, ir.directed and not symmetric, dl)
    return _tsp_answer(ir, g, tour, "milp-highs (lazy DFJ subtour elimination)", status == "optimal",
                       False)


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
    wo = w[np.ix_(others, others)]                     # (m, m) between others
    full = (1 << m) - 1
    masks = np.arange(1 << m)
    member = ((masks[:, None] >> np.arange(m)[None, :]) & 1).astype(bool)
    h = np.full((1 << m, m), np.inf)                   # h[mask, j]: from j, visit rest, return
    h[full] = w[others, start]
    popcount = member.sum(axis=1)
    for p in range(m - 1, 0, -1):
        level = masks[popcount == p]
        best = np.full((len(level), m), np.inf)
        for k in range(m):
            sel = ~member[level, k]
            if not sel.any():
                continue
            nxt = h[level[sel] | (1 << k), k]          # (s,)
            cand = wo[:, k][None, :] + nxt[:, None]    # (s, m) over j
            best[sel] = np.minimum(best[sel], cand)
        best[~member[level]] = np.inf
        h[level] = best
    first = w[start, others] + h[1 << np.arange(m), np.arange(m)]
    remaining = float(first.min())
    if not math.isfinite(remaining):
        return None
    return _hk_reconstruct(g, start, others, w, h, remaining)


def _hk_reconstruct(g: _Indexed, start: int, others: list[int], w: np.ndarray, h: np.ndarray,
                    remaining: float) -> list[int]:
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


def _add_subtour_cut(inside: set[int], arcs: list[tuple[int, int]], rows: list[dict[int, float]],
                     lo: list[float], hi: list[float]) -> None:
    """DFJ: at most |S| - 1 chosen arcs inside S (equivalent to the cut form given the degree
    rows)."""
    rows.append({k: 1.0 for k, (i, j) in enumerate(arcs) if i in inside and j in inside})
    lo.append(0.0)
    hi.append(len(inside) - 1.0)


def _tsp_root_cuts(n: int, arcs: list[tuple[int, int]], cost: np.ndarray,
                   rows: list[dict[int, float]], lo: list[float], hi: list[float],
                   dl: _Deadline, max_rounds: int = 100) -> None:
    """Strengthen the formulation before branching: solve the LP relaxation, add the subtour
    constraint of every disconnected support component or of a global minimum cut (Stoer–Wagner
    on x_ij + x_ji) below 2, repeat. Only adds valid inequalities, so optimality is unaffected."""
    for _ in range(max_rounds):
        if dl.remaining() < 0.5:
            return
        a = _rows_matrix(rows, len(arcs))
        res = linprog(cost, bounds=(0, 1), method="highs",
                      options={"time_limit": dl.remaining()},
                      **_lp_constraints(a, lo, hi))
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


def _tsp_degree_rows(n: int, arcs: list[tuple[int, int]], directed: bool
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


def _tsp_answer(ir: GraphIR, g: _Indexed, tour: list[int] | None, method: str, optimal: bool,
                canonical: bool) -> SolverResult:
    start = ir.parameters.get("start", g.names[0])
    if tour is None and optimal:
        ans = TSPAnswer(start, False, [], None, canonical, g.arith.exact)
        return _result(ir, "no_solution", method, True, ans,
                       "No tour: the graph has no Hamiltonian cycle.")
    if tour is None:
        return _result(ir, "timeout", method, False, None,
                       "Time budget spent before a tour was found.")
    total = g.arith.report(sum(g.weight[a, b] for a, b in zip(tour, tour[1:])))
    names = [g.names[v] for v in tour]
    ans = TSPAnswer(start, True, names, total, canonical, g.arith.exact)
    if not optimal:
        return _result(ir, "timeout", method, False, ans,
                       f"Time budget spent: best tour found has total weight {total} (not proven "
                       "optimal).")
    return _result(ir, "ok", method, True, ans,
                   f"Optimal tour {' -> '.join(names)}, total weight {total}.")


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------

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
