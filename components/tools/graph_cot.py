"""Graph-CoT's function API over any graph backend (GraphDancer's action space).

:class:`GraphCoT` answers the four functions of :data:`~components.tools.protocol.GRAPH_FUNCTIONS`
with the observation sentences Graph-CoT / GraphDancer use, and returns every call as a
structured :class:`GraphCall`: function, arguments, observation text, error (or ``None``), the
node ids the call *returned* (the ``U_t`` of GraphDancer's S-/E-round bookkeeping) and the node it
was about. Every model-driven lookup is a parameterised query through the one read-only query path
(:class:`~components.cypher.query_path.ReadOnlyQueryPath`) with a row limit; labels, types and
properties enter query text only after being checked against the schema, via
:func:`~components.graph.ladybug.quote_identifier`.

=====================  ======================================================================
call                   observation (success)
=====================  ======================================================================
RetrieveNode[text]     ``The ID of this retrieval target node is ann.`` (``top_k`` = 1), else
                       ``The IDs of the retrieval target nodes are: ['ann', 'bob'].`` (best first)
NodeFeature[n, f]      ``The name feature of ann are: Ann.``
NeighborCheck[n, t]    ``The KNOWS neighbors of ann are: ['bob'].``
NodeDegree[n, t]       ``The KNOWS neighbor node degree of ann are: 1.``
=====================  ======================================================================

Errors use Graph-CoT's sentences (:data:`ERROR_MESSAGES`), e.g. an unknown node or neighbour type:
``The node or neighbor type does not exist in the graph. This might be because your given neighbor
type is not correct. Please modify it.``; the precise reason is kept in :attr:`GraphCall.error`.

**Node ids.** Node ids are unique per label, not across labels. A node is written as its bare
``id`` when no other label has a node with that id, and as ``Label:id`` otherwise (also when the
id itself starts with ``<a label>:``, so it reads back unchanged). An argument is resolved as:

1. ``Label:id`` — when the text before the first ``:`` names a label (case-insensitive) and that
   label has a node with the rest as id;
2. otherwise the whole text as a bare id: found under exactly one label → that node; under
   several → an ``ambiguous_node`` error naming the ``Label:id`` spellings; under none →
   ``unknown_node``.

**Neighbour types.** Relationships are typed and directed; a ``neighbor_type`` is one of

* a **relationship type** (case-insensitive), optionally with an arrow: ``WROTE`` or ``WROTE->``
  follows it *outgoing* from the node — or *incoming* when the node's label has only incoming
  ``WROTE`` relationships in the schema (``NeighborCheck[paper_1, WROTE]`` gives its authors);
  ``<-CITES`` (or ``CITES<-``) follows it *incoming* only (the papers citing this one);
  ``-CITES-`` (or ``<-CITES->``) follows it in *both* directions;
* a **node label** (case-insensitive, a trailing plural ``s`` tolerated: ``author``,
  ``Authors``): every relationship type, in either direction, that connects the node's label to
  that label in the schema (``NeighborCheck[paper_1, Author]`` → its authors).

A name that is both a relationship type and a label is read as the relationship type. Neighbours
are distinct nodes, listed per schema triple in schema order and by id within one, at most
``row_limit`` of them (the observation says when the list was cut); ``NodeDegree`` counts all of
them (``count(DISTINCT …)``, or the size of the union when several triples reach the same label).
"""

from __future__ import annotations

import datetime as _dt
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.backend import GraphBackend
from components.graph.errors import GraphError
from components.graph.schema import GraphSchema, quote_identifier
from components.tools.protocol import GRAPH_FUNCTIONS, canonical_function
from components.tools.retriever import DEFAULT_TOP_K, NodeKey

if TYPE_CHECKING:
    from components.tools.retriever import NodeIndex

__all__ = [
    "DEFAULT_ROW_LIMIT",
    "ERROR_MESSAGES",
    "CallError",
    "ErrorCode",
    "GraphCall",
    "GraphCoT",
    "Hop",
    "error_observation",
    "resolve_neighbor_type",
]

DEFAULT_ROW_LIMIT = 50
DEGREE_ROW_CAP = 100_000  # rows fetched to count a union of several triples
Direction = Literal["out", "in"]
#: What a function implementation returns: observation, returned ids, subject, truncated.
#: (observation, node ids, subject, truncated[, the value obtained: NodeFeature / NodeDegree])
_Result = tuple[Any, ...]


class ErrorCode(StrEnum):
    BAD_ARGUMENTS = "bad_arguments"
    UNKNOWN_FUNCTION = "unknown_function"
    NOT_A_CALL = "not_a_call"
    UNKNOWN_NODE = "unknown_node"
    AMBIGUOUS_NODE = "ambiguous_node"
    UNKNOWN_FEATURE = "unknown_feature"
    UNKNOWN_NEIGHBOR_TYPE = "unknown_neighbor_type"
    NO_MATCH = "no_match"
    NO_INDEX = "no_index"
    GRAPH_ERROR = "graph_error"


_NEIGHBOR_MISSING = (
    "The node or neighbor type does not exist in the graph. This might be because your given "
    "neighbor type is not correct. Please modify it."
)
_FEATURE_MISSING = (
    "The node or feature name does not exist in the graph. This might be because your given "
    "feature name is not correct. Please modify it."
)
_NO_MATCH = "There is no information that can be matched in the database. Please try another query."
_BAD_ARGUMENTS = {
    "RetrieveNode": "There is something wrong with the arguments for node retrieval. Expect: RetrieveNode[keyword].",
    "NodeFeature": "There is something wrong with the arguments for node checking. "
    "Expect: NodeFeature[node_id, feature_name].",
    "NeighborCheck": "There is something wrong with the arguments for neighbour checking. "
    "Expect: NeighborCheck[node_id, neighbor_type].",
    "NodeDegree": "There is something wrong with the arguments for degree checking. "
    "Expect: NodeDegree[node_id, neighbor_type].",
}
_INVALID_ACTION = (
    "Invalid Action. Valid Actions are RetrieveNode[keyword], NeighborCheck[node_id, neighbor_type], "
    "NodeFeature[node_id, feature_name], NodeDegree[node_id, neighbor_type]."
)

#: Observation text per (error code, function); ``None`` as function = any function.
ERROR_MESSAGES: Mapping[tuple[ErrorCode, str | None], str] = {
    (ErrorCode.UNKNOWN_FUNCTION, None): _INVALID_ACTION,
    (ErrorCode.NOT_A_CALL, None): "Invalid graph call. Expected Exactly One: FunctionName[args].",
    (ErrorCode.NO_MATCH, None): _NO_MATCH,
    (ErrorCode.NO_INDEX, None): _NO_MATCH,
    (ErrorCode.UNKNOWN_NODE, "NodeFeature"): _FEATURE_MISSING,
    (ErrorCode.UNKNOWN_FEATURE, "NodeFeature"): _FEATURE_MISSING,
    (ErrorCode.UNKNOWN_NODE, None): _NEIGHBOR_MISSING,
    (ErrorCode.UNKNOWN_NEIGHBOR_TYPE, None): _NEIGHBOR_MISSING,
    **{(ErrorCode.BAD_ARGUMENTS, fn): text for fn, text in _BAD_ARGUMENTS.items()},
}


def error_observation(code: ErrorCode, function: str | None, detail: str = "") -> str:
    """The observation sentence the model sees for an error (Graph-CoT's wording)."""
    message = ERROR_MESSAGES.get((code, function)) or ERROR_MESSAGES.get((code, None))
    if message is not None:
        return message
    if code is ErrorCode.AMBIGUOUS_NODE:
        return f"{detail} Please use one of these IDs."
    if code is ErrorCode.BAD_ARGUMENTS:
        return _INVALID_ACTION
    return f"Internal error during graph execution: {detail}"


@dataclass(frozen=True)
class CallError:
    code: ErrorCode
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"code": str(self.code), "detail": self.detail}


@dataclass(frozen=True)
class GraphCall:
    """One executed (or refused) function call.

    ``node_ids`` are the ids the call returned, as the model sees them (ranked for
    ``RetrieveNode``, listed for ``NeighborCheck``; empty for ``NodeFeature``/``NodeDegree`` and
    for errors). ``subject`` is the node the call was about, when it resolved.
    """

    function: str
    args: tuple[str, ...]
    observation: str
    error: CallError | None = None
    node_ids: tuple[str, ...] = ()
    subject: str | None = None
    truncated: bool = False
    elapsed_ms: float = 0.0

    #: what the call obtained, for grounding an answer: the feature value (NodeFeature), the
    #: degree (NodeDegree), the returned ids (RetrieveNode / NeighborCheck, as one list)
    values: tuple[Any, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None

    def result_values(self) -> list[Any]:
        """Candidates an answer may equal (docs/evaluation.md, grounded EM)."""
        out: list[Any] = [v for v in self.values if v is not None]
        if self.node_ids:
            out += [list(self.node_ids), *self.node_ids]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "args": list(self.args),
            "observation": self.observation,
            "error": None if self.error is None else self.error.to_dict(),
            "node_ids": list(self.node_ids),
            "subject": self.subject,
            "truncated": self.truncated,
            "elapsed_ms": round(self.elapsed_ms, 3),
        }


_RESOLVE_CACHE = 65_536


class _CallFailed(Exception):
    def __init__(self, code: ErrorCode, detail: str) -> None:
        super().__init__(detail)
        self.error = CallError(code, detail)


# ---------------------------------------------------------------------------------------------
# Neighbour types
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hop:
    """One schema triple followed from a node: relationship type, direction, neighbour label."""

    rel_type: str
    direction: Direction
    label: str


_ARROWED = re.compile(r"^(<-|->|-)?\s*([A-Za-z_]\w*)\s*(<-|->|-)?$")
#: (left arrow, right arrow) -> directions to follow; "default" = outgoing, else incoming.
_ARROWS: Mapping[tuple[str | None, str | None], tuple[str, ...]] = {
    (None, None): ("default",),
    (None, "->"): ("out",),
    ("->", None): ("out",),
    ("-", "->"): ("out",),
    ("<-", None): ("in",),
    (None, "<-"): ("in",),
    ("<-", "-"): ("in",),
    ("-", "-"): ("out", "in"),
    ("<-", "->"): ("out", "in"),
}


def _hops_for_type(schema: GraphSchema, label: str, rel_type: str, mode: tuple[str, ...]) -> tuple[Hop, ...]:
    triples = sorted(schema.triples())
    out = tuple(Hop(t, "out", d) for s, t, d in triples if t == rel_type and s == label)
    inc = tuple(Hop(t, "in", s) for s, t, d in triples if t == rel_type and d == label)
    by_mode: Mapping[str, Callable[[], tuple[Hop, ...]]] = {
        "default": lambda: out or inc,
        "out": lambda: out,
        "in": lambda: inc,
    }
    return tuple(h for m in mode for h in by_mode[m]())


def _hops_for_label(schema: GraphSchema, label: str, other: str) -> tuple[Hop, ...]:
    hops: list[Hop] = []
    for s, t, d in sorted(schema.triples()):
        if s == label and d == other:
            hops.append(Hop(t, "out", d))
        if d == label and s == other:
            hops.append(Hop(t, "in", s))
    return tuple(dict.fromkeys(hops))


def resolve_neighbor_type(schema: GraphSchema, label: str, neighbor_type: str) -> tuple[Hop, ...]:
    """The schema triples that ``neighbor_type`` follows from a node of ``label`` (see the module
    docstring); empty when it names nothing reachable from that label.

    >>> from components.graph.schema import NodeLabel, RelType, Triple
    >>> s = GraphSchema.build([NodeLabel("Author", {}), NodeLabel("Paper", {})],
    ...     [RelType("WROTE", (Triple("Author", "WROTE", "Paper"),))])
    >>> resolve_neighbor_type(s, "Paper", "wrote")
    (Hop(rel_type='WROTE', direction='in', label='Author'),)
    >>> resolve_neighbor_type(s, "Author", "papers")
    (Hop(rel_type='WROTE', direction='out', label='Paper'),)
    >>> resolve_neighbor_type(s, "Author", "<-WROTE")
    ()
    """
    m = _ARROWED.match(neighbor_type.strip())
    if m is None:
        return ()
    left, name, right = m.group(1), m.group(2), m.group(3)
    mode = _ARROWS.get((left, right))
    if mode is None:
        return ()
    types = {t.lower(): t for t in schema.types}
    if name.lower() in types:
        return _hops_for_type(schema, label, types[name.lower()], mode)
    if mode != ("default",):
        return ()
    labels = {lb.lower(): lb for lb in schema.labels}
    other = labels.get(name.lower())
    if other is None and name.lower().endswith("s"):
        other = labels.get(name.lower()[:-1])
    return _hops_for_label(schema, label, other) if other else ()


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


def _render_value(value: Any) -> str:
    """A property value as observation text (Python's ``str`` for scalars and lists)."""
    renderers: Mapping[type, Callable[[Any], str]] = {
        _dt.date: lambda v: v.isoformat(),
        _dt.datetime: lambda v: v.isoformat(),
        list: lambda v: str([v_ if isinstance(v_, str) else _render_value(v_) for v_ in v]),
        tuple: lambda v: str([v_ if isinstance(v_, str) else _render_value(v_) for v_ in v]),
    }
    for kind, render in renderers.items():
        if isinstance(value, kind):
            return render(value)
    return str(value)


_PK_CASTS: Mapping[str, Callable[[str], Any]] = {"STRING": str, "INT64": int}


# ---------------------------------------------------------------------------------------------
# The API
# ---------------------------------------------------------------------------------------------


class GraphCoT:
    """Graph-CoT's ``RetrieveNode`` / ``NodeFeature`` / ``NeighborCheck`` / ``NodeDegree``.

    One instance per graph; it is stateless between calls and safe to share between episodes
    (the ambiguous-id set is computed once, lazily). ``index`` is required for
    ``RetrieveNode`` only.
    """

    def __init__(
        self,
        backend: GraphBackend,
        *,
        index: NodeIndex | None = None,
        query_path: ReadOnlyQueryPath | None = None,
        top_k: int = DEFAULT_TOP_K,
        row_limit: int = DEFAULT_ROW_LIMIT,
    ) -> None:
        if top_k < 1 or row_limit < 1:
            raise ValueError("top_k and row_limit must be >= 1")
        self.backend = backend
        self.schema: GraphSchema = backend.schema()
        self.query = query_path if query_path is not None else ReadOnlyQueryPath(backend, schema=self.schema)
        self.index = index
        self.top_k = top_k
        self.row_limit = row_limit
        self._labels_ci = {lb.lower(): lb for lb in self.schema.labels}
        self._ambiguous: frozenset[str] | None = None
        # node-id argument -> resolved key; the graph behind a snapshot is read-only, and episodes
        # keep asking about the ids earlier calls returned (bounded, cleared when full)
        self._resolved: dict[str, NodeKey] = {}
        self._functions: Mapping[str, Callable[..., _Result]] = {
            "RetrieveNode": self._retrieve_node,
            "NodeFeature": self._node_feature,
            "NeighborCheck": self._neighbor_check,
            "NodeDegree": self._node_degree,
        }

    # -- public calls ----------------------------------------------------------------------
    def call(self, function: str, args: Sequence[str]) -> GraphCall:
        """Run one function by name (aliases accepted) with already-split string arguments."""
        start = time.perf_counter()
        args = tuple(str(a) for a in args)
        name = canonical_function(function)
        if name is None:
            err = CallError(ErrorCode.UNKNOWN_FUNCTION, f"unknown function {function!r}")
            return GraphCall(function, args, error_observation(err.code, None), err)
        signature = GRAPH_FUNCTIONS[name]
        if len(args) != signature.arity or any(not a.strip() for a in args):
            err = CallError(ErrorCode.BAD_ARGUMENTS, f"{name} takes {signature.usage()}, got {list(args)}")
            return GraphCall(name, args, error_observation(err.code, name), err)
        try:
            result = self._functions[name](*(a.strip() for a in args))
            observation, node_ids, subject, truncated = result[:4]
            values = tuple(result[4:])
        except _CallFailed as failed:
            err = failed.error
            return GraphCall(
                name,
                args,
                error_observation(err.code, name, err.detail),
                err,
                elapsed_ms=(time.perf_counter() - start) * 1e3,
            )
        except GraphError as exc:
            err = CallError(ErrorCode.GRAPH_ERROR, f"{exc.code}: {exc}")
            return GraphCall(
                name,
                args,
                error_observation(err.code, name, str(exc)),
                err,
                elapsed_ms=(time.perf_counter() - start) * 1e3,
            )
        return GraphCall(
            name,
            args,
            observation,
            None,
            node_ids,
            subject,
            truncated,
            (time.perf_counter() - start) * 1e3,
            values,
        )

    def retrieve_node(self, text: str) -> GraphCall:
        return self.call("RetrieveNode", (text,))

    def node_feature(self, node_id: str, feature: str) -> GraphCall:
        return self.call("NodeFeature", (node_id, feature))

    def neighbor_check(self, node_id: str, neighbor_type: str) -> GraphCall:
        return self.call("NeighborCheck", (node_id, neighbor_type))

    neighbour_check = neighbor_check

    def node_degree(self, node_id: str, neighbor_type: str) -> GraphCall:
        return self.call("NodeDegree", (node_id, neighbor_type))

    # -- ids -------------------------------------------------------------------------------
    def _ambiguous_ids(self) -> frozenset[str]:
        """Ids present under more than one label (from the index's keys, else one scan)."""
        if self._ambiguous is None:
            counts: Counter[str] = Counter()
            if self.index is not None and len(self.index) == self.schema.node_count:
                counts.update(k.id for k in self.index.keys)
            else:
                for nl in self.schema.node_labels:
                    pk = quote_identifier(nl.primary_key)
                    # Trusted catalog scan: identifiers from the schema, no values in the text.
                    rows = self.backend.run(f"MATCH (n:{quote_identifier(nl.label)}) RETURN n.{pk}").rows
                    counts.update(str(r[0]) for r in rows)
            self._ambiguous = frozenset(i for i, c in counts.items() if c > 1)
        return self._ambiguous

    def render_id(self, key: NodeKey) -> str:
        """How the model sees a node: bare id unless ambiguous or label-prefixed-looking."""
        head, sep, _ = key.id.partition(":")
        if key.id in self._ambiguous_ids() or (sep and head.lower() in self._labels_ci):
            return f"{key.label}:{key.id}"
        return key.id

    def _pk_value(self, label: str, node_id: str) -> Any:
        """The id as the label's primary-key type (``None`` when it cannot be one)."""
        nl = self.schema.labels[label]
        cast = _PK_CASTS.get(nl.properties.get(nl.primary_key, "STRING"), str)
        try:
            return cast(node_id)
        except ValueError:
            return None

    def _exists(self, label: str, node_id: str) -> bool:
        value = self._pk_value(label, node_id)
        if value is None:
            return False
        pk = quote_identifier(self.schema.labels[label].primary_key)
        result = self.query.run(
            f"MATCH (n:{quote_identifier(label)}) WHERE n.{pk} = $id RETURN n.{pk} AS id",
            {"id": value},
            limit=1,
        )
        return bool(result.rows)

    def resolve_node(self, text: str) -> NodeKey:
        """Map a node-id argument to ``(label, id)`` (see the module docstring); cached."""
        key = self._resolved.get(text)
        if key is None:
            key = self._resolve_node(text)
            if len(self._resolved) >= _RESOLVE_CACHE:
                self._resolved.clear()
            self._resolved[text] = key
        return key

    def _resolve_node(self, text: str) -> NodeKey:
        head, sep, rest = text.partition(":")
        label = self._labels_ci.get(head.strip().lower()) if sep else None
        if label is not None and rest.strip() and self._exists(label, rest.strip()):
            return NodeKey(label, rest.strip())
        found = [lb for lb in self.schema.labels if self._exists(lb, text)]
        if len(found) == 1:
            return NodeKey(found[0], text)
        if found:
            spellings = ", ".join(f"{lb}:{text}" for lb in found)
            raise _CallFailed(ErrorCode.AMBIGUOUS_NODE, f"The node ID {text} matches several nodes: {spellings}.")
        raise _CallFailed(ErrorCode.UNKNOWN_NODE, f"no node with id {text!r}")

    # -- functions -------------------------------------------------------------------------
    def _retrieve_node(self, text: str) -> _Result:
        if self.index is None:
            raise _CallFailed(ErrorCode.NO_INDEX, "no node index is configured for RetrieveNode")
        hits = self.index.search(text, self.top_k)
        if not hits:
            raise _CallFailed(ErrorCode.NO_MATCH, f"no node matches {text!r}")
        ids = tuple(self.render_id(h.key) for h in hits)
        if len(ids) == 1:
            return f"The ID of this retrieval target node is {ids[0]}.", ids, None, False
        return f"The IDs of the retrieval target nodes are: {list(ids)}.", ids, None, False

    def _node_feature(self, node_id: str, feature: str) -> _Result:
        key = self.resolve_node(node_id)
        props = {p.lower(): p for p in self.schema.labels[key.label].properties}
        prop = props.get(feature.lower())  # feature names are matched case-insensitively
        if prop is None:
            raise _CallFailed(ErrorCode.UNKNOWN_FEATURE, f"label {key.label} has no property {feature!r}")
        pk = quote_identifier(self.schema.labels[key.label].primary_key)
        result = self.query.run(
            f"MATCH (n:{quote_identifier(key.label)}) WHERE n.{pk} = $id RETURN n.{quote_identifier(prop)} AS value",
            self._param(key),
            limit=1,
        )
        value = result.rows[0][0] if result.rows else None
        subject = self.render_id(key)
        return f"The {feature} feature of {node_id} are: {_render_value(value)}.", (), subject, False, value

    def _hops(self, key: NodeKey, neighbor_type: str) -> tuple[Hop, ...]:
        hops = resolve_neighbor_type(self.schema, key.label, neighbor_type)
        if not hops:
            raise _CallFailed(
                ErrorCode.UNKNOWN_NEIGHBOR_TYPE,
                f"{neighbor_type!r} names no relationship type or label reachable from {key.label}",
            )
        return hops

    def _hop_query(self, key: NodeKey, hop: Hop, returns: str) -> str:
        src = self.schema.labels[key.label]
        dst = self.schema.labels[hop.label]
        rel = f"[:{quote_identifier(hop.rel_type)}]"
        pattern = f"-{rel}->" if hop.direction == "out" else f"<-{rel}-"
        return (
            f"MATCH (n:{quote_identifier(key.label)}){pattern}(m:{quote_identifier(hop.label)}) "
            f"WHERE n.{quote_identifier(src.primary_key)} = $id " + returns.format(pk=quote_identifier(dst.primary_key))
        )

    def _param(self, key: NodeKey) -> dict[str, Any]:
        return {"id": self._pk_value(key.label, key.id)}

    def _neighbors(self, key: NodeKey, hops: Iterable[Hop], limit: int) -> tuple[list[NodeKey], bool]:
        seen: dict[NodeKey, None] = {}
        truncated = False
        for hop in hops:
            result = self.query.run(
                self._hop_query(key, hop, "RETURN DISTINCT m.{pk} AS id ORDER BY id"),
                self._param(key),
                limit=limit,
            )
            truncated = truncated or result.truncated
            seen.update(dict.fromkeys(NodeKey(hop.label, str(r[0])) for r in result.rows))
        keys = list(seen)
        if len(keys) > limit:
            keys, truncated = keys[:limit], True
        return keys, truncated

    def _neighbor_check(self, node_id: str, neighbor_type: str) -> _Result:
        key = self.resolve_node(node_id)
        keys, truncated = self._neighbors(key, self._hops(key, neighbor_type), self.row_limit)
        ids = tuple(self.render_id(k) for k in keys)
        text = f"The {neighbor_type} neighbors of {node_id} are: {list(ids)}."
        if truncated:
            text += f" Only the first {len(ids)} neighbors are shown."
        return text, ids, self.render_id(key), truncated

    def _node_degree(self, node_id: str, neighbor_type: str) -> _Result:
        key = self.resolve_node(node_id)
        by_label: dict[str, list[Hop]] = {}
        for hop in self._hops(key, neighbor_type):
            by_label.setdefault(hop.label, []).append(hop)
        degree = 0
        for hops in by_label.values():
            if len(hops) == 1:
                result = self.query.run(
                    self._hop_query(key, hops[0], "RETURN count(DISTINCT m) AS degree"),
                    self._param(key),
                    limit=1,
                )
                degree += int(result.rows[0][0]) if result.rows else 0
            else:  # several triples reach the same label: count the union of their neighbours
                keys, _ = self._neighbors(key, hops, DEGREE_ROW_CAP)
                degree += len(keys)
        return (
            f"The {neighbor_type} neighbor node degree of {node_id} are: {degree}.",
            (),
            self.render_id(key),
            False,
            degree,
        )
