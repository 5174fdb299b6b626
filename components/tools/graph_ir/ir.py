"""The GRAIN graph IR: constants, :class:`GraphIR` / :class:`IRError`, parsing and validation
(:func:`parse_graph_ir`, :func:`validate_ir`) and the networkx view (:func:`to_networkx`).
The rules are in the package docstring (:mod:`components.tools.graph_ir`)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

import networkx as nx

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
    **{
        a: "shortest_path"
        for a in (
            "shortest_path",
            "shortestpath",
            "dijkstra",
            "min_path",
            "minimum_path",
            "shortest_route",
            "minimum_cost_path",
        )
    },
    **{
        a: "graph_coloring"
        for a in (
            "graph_coloring",
            "graph_colouring",
            "coloring",
            "colouring",
            "min_coloring",
            "minimum_coloring",
            "min_graph_coloring",
            "minimum_graph_coloring",
            "vertex_coloring",
            "node_coloring",
            "chromatic_number",
        )
    },
    **{
        a: "tsp"
        for a in (
            "tsp",
            "traveling_salesman",
            "travelling_salesman",
            "traveling_salesman_problem",
            "travelling_salesman_problem",
            "traveling_salesperson",
            "travelling_salesperson",
        )
    },
    **{a: "vertex_cover" for a in ("vertex_cover", "min_vertex_cover", "minimum_vertex_cover", "mvc", "node_cover")},
    **{
        a: "bfs"
        for a in (
            "bfs",
            "breadth_first_search",
            "bfs_order",
            "bfs_traversal",
            "graph_traversal",
            "traversal",
            "breadth_first_traversal",
        )
    },
    **{
        a: "centrality"
        for a in (
            "centrality",
            "node_centrality",
            "degree_centrality",
            "in_degree_centrality",
            "out_degree_centrality",
            "betweenness_centrality",
            "closeness_centrality",
            "pagerank",
            "page_rank",
        )
    },
}

#: ``problem_type`` aliases that also fix the centrality kind.
_IMPLIED_KIND = {
    "degree_centrality": "degree",
    "in_degree_centrality": "in_degree",
    "out_degree_centrality": "out_degree",
    "betweenness_centrality": "betweenness",
    "closeness_centrality": "closeness",
    "pagerank": "pagerank",
    "page_rank": "pagerank",
}

CENTRALITY_KINDS = ("degree", "in_degree", "out_degree", "betweenness", "closeness", "pagerank")

ERROR_CODES = (
    "not_text",  # the input is not a string
    "no_graph_block",  # <graph> without </graph>, or an empty block
    "multiple_graph_blocks",  # more than one <graph> in one tool call
    "invalid_json",  # payload is not JSON
    "not_an_object",  # top level (or graph/data/parameters) is not a JSON object
    "duplicate_key",  # a JSON object repeats a key
    "missing_key",  # problem_type / graph / graph.data / directed / weighted missing
    "wrong_type",  # a key has the wrong JSON type
    "unsupported_format",  # graph.type other than adjacency_list
    "unknown_problem_type",
    "bad_node_name",
    "bad_weight",  # non-numeric, non-finite or boolean weight
    "negative_weight",
    "conflicting_weights",  # undirected edge listed twice with different weights
    "self_loop",
    "empty_graph",
    "too_large",
    "missing_parameter",
    "bad_parameter",
    "unknown_node",  # a parameter names a node that is not in the graph
    "internal_error",  # a bug: reported instead of raised
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
            "graph": {"type": "adjacency_list", "data": data, "directed": self.directed, "weighted": self.weighted},
            "parameters": dict(self.parameters),
        }


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
        raise _IRFail(
            "not_an_object" if where != "parameters" else "wrong_type",
            f"{where} must be a JSON object, got {_json_type(value)}",
        )
    return value


def _json_type(value: Any) -> str:
    return {
        dict: "object",
        list: "array",
        str: "string",
        bool: "boolean",
        int: "number",
        float: "number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


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
        raise _IRFail("unknown_problem_type", f"unknown problem_type {raw!r}; supported: {', '.join(PROBLEM_TYPES)}")
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
        raise _IRFail(
            "bad_weight", f"edge {edge}: weight {raw!r} is not a finite number of magnitude at most {MAX_ABS_WEIGHT:g}"
        )
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


def _parse_adjacency(
    data: Mapping[str, Any], directed: bool, weighted: bool, warnings: list[str]
) -> tuple[tuple[str, ...], tuple[tuple[str, str, Number], ...]]:
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
                raise _IRFail(
                    "conflicting_weights", f"undirected edge {key[0]!r}-{key[1]!r} has weights {edges[key]!r} and {w!r}"
                )
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


def _check_graph(
    ptype: str,
    nodes: tuple[str, ...],
    edges: tuple[tuple[str, str, Number], ...],
    weighted: bool,
    params: Mapping[str, Any],
    implied_kind: str | None,
) -> None:
    if not nodes:
        raise _IRFail("empty_graph", "the graph has no nodes")
    if not weighted or ptype not in ("shortest_path", "centrality"):
        return
    if ptype == "centrality" and _peek_kind(params, implied_kind) in ("degree", "in_degree", "out_degree"):
        return
    for u, v, w in edges:
        if w < 0:
            raise _IRFail(
                "negative_weight", f"edge {u!r}-{v!r} has negative weight {w!r}; {ptype} needs non-negative weights"
            )


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


def _params_shortest_path(
    params: Mapping[str, Any], known: set[str], _kind: str | None, _w: list[str]
) -> dict[str, Any]:
    return {
        "source": _required_node(params, _SOURCE_KEYS, known),
        "target": _required_node(params, _TARGET_KEYS, known),
    }


def _params_bfs(params: Mapping[str, Any], known: set[str], _kind: str | None, _w: list[str]) -> dict[str, Any]:
    return {"source": _required_node(params, _SOURCE_KEYS, known)}


def _params_tsp(params: Mapping[str, Any], known: set[str], _kind: str | None, _w: list[str]) -> dict[str, Any]:
    start = _take(params, _TSP_START_KEYS, _node_param(known))
    return {} if start is _MISSING else {"start": start}


def _params_none(params: Mapping[str, Any], known: set[str], _kind: str | None, _w: list[str]) -> dict[str, Any]:
    return {}


def _kind_value(raw: Any, key: str) -> str | None:
    """Normalised centrality kind, or ``None`` for an ``algorithm`` value that is not a kind."""
    token = _canonical_token(raw) if isinstance(raw, str) else ""
    token = re.sub(r"_?centrality$", "", token)
    token = {
        "page_rank": "pagerank",
        "indegree": "in_degree",
        "outdegree": "out_degree",
        "in": "in_degree",
        "out": "out_degree",
    }.get(token, token)
    if token in CENTRALITY_KINDS:
        return token
    if key in _LENIENT_KIND_KEYS:
        return None
    raise _IRFail("bad_parameter", f"unknown centrality kind {raw!r}; use one of {', '.join(CENTRALITY_KINDS)}")


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


def _params_centrality(
    params: Mapping[str, Any], known: set[str], implied: str | None, warnings: list[str]
) -> dict[str, Any]:
    kind = _centrality_kind(params, implied)
    if kind is None:
        kind = "degree"
        warnings.append("no centrality kind given: using degree centrality")
    out: dict[str, Any] = {"kind": kind}
    top_k = _take(params, _TOPK_KEYS, _top_k)
    if top_k is not _MISSING:
        out["top_k"] = top_k
    norm = _node_param(known)
    requested = _take(
        params, _NODES_KEYS, lambda raw, key: [norm(x, key) for x in (raw if isinstance(raw, list) else [raw])]
    )
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
