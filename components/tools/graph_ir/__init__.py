"""GRAIN's graph-theory tool: a validated JSON graph IR and exact, deterministic solvers.

The agent writes a JSON query inside ``<graph>…</graph>`` (GRAIN Table 12)::

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

Layout (one algorithm per module, as networkx does): :mod:`.ir` (constants, :class:`GraphIR`,
parsing and validation, :func:`to_networkx`), :mod:`.results` (answers, :class:`SolverResult`,
:class:`SolveOptions`), :mod:`._common` (indexed view, arithmetic, deadline), the solvers
:mod:`.shortest_path`, :mod:`.coloring`, :mod:`.tsp`, :mod:`.vertex_cover`, :mod:`.bfs`,
:mod:`.centrality` (:mod:`.clique` is the maximum clique shared by colouring and vertex cover),
and :mod:`.tool` (:data:`SOLVERS`, :func:`solve`, :func:`run_graph_tool`).
"""

from __future__ import annotations

from components.tools.graph_ir.ir import (
    CENTRALITY_KINDS,
    DEFAULT_TIME_LIMIT_S,
    ERROR_CODES,
    HELD_KARP_MAX_NODES,
    MAX_ABS_WEIGHT,
    MAX_EDGES,
    MAX_NODES,
    MAX_TEXT_CHARS,
    MAX_WEIGHT_DECIMALS,
    PROBLEM_ALIASES,
    PROBLEM_TYPES,
    SCORE_DECIMALS,
    TSP_MAX_NODES,
    GraphIR,
    IRError,
    natural_key,
    parse_graph_ir,
    to_networkx,
    validate_ir,
)
from components.tools.graph_ir.results import (
    BFSAnswer,
    CentralityAnswer,
    ColoringAnswer,
    ShortestPathAnswer,
    SolveOptions,
    SolverResult,
    TSPAnswer,
    VertexCoverAnswer,
)
from components.tools.graph_ir.tool import (
    SOLVERS,
    graph_tool_result,
    run_graph_tool,
    solve,
)

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
