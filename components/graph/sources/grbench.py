"""Import a GRBench / Graph-CoT ``graph.json`` into :class:`GraphData`.

Input shape (as written by Graph-CoT's ``raw_process`` notebooks)::

    {"<type>_nodes": {"<node id>": {"features": {...}, "neighbors": {"<neighbor type>": [ids]}}}}

``SRC`` is the file, or a folder holding ``graph.json``. Node ids are strings (unique across the
whole file, as Graph-CoT itself asserts).

Input rules (each violation is an :class:`ImportFormatError` naming the file and the JSON path,
e.g. ``paper_nodes/p1/features/year``, or the line where the JSON text itself is at fault):

* UTF-8 (a byte-order mark is allowed), standard JSON: ``NaN`` / ``Infinity`` are refused, and
  so is any integer outside INT64 (-2**63 .. 2**63-1) or decimal that overflows a double
  (``1e400``), anywhere in the file — each with its line (Python's ``json`` would make the first
  ``nan``, keep the second as an unbounded int the engine cannot store, and the third ``inf``).
  An empty or whitespace-only file, and a file without a single node, are errors
  (``... is empty``).
* Duplicate keys are refused in every object (Python's ``json`` would silently keep the last
  one): a repeated node id in a ``<type>_nodes`` table is "duplicate node id", any other repeated
  key "duplicate key". Node ids must be non-empty.
* A node object holds only ``features`` and ``neighbors`` (both optional); any other key is an
  error rather than silently ignored.
* Values nested more than ``MAX_JSON_DEPTH`` (100) levels deep are refused (with the line when
  the parser itself could not go that deep).
* Strings must be valid Unicode: a lone surrogate escape (``"\\ud800"``) in a feature value,
  node id or neighbor id is refused.
* Names: a feature, type or neighbor key starting with ``_`` is refused (reserved for internal
  keys); labels, relationship types and feature names follow the graph engine's
  case-insensitive catalog (``PAPER_nodes`` beside ``paper_nodes``, features ``Name`` and
  ``name`` of one label, a feature ``ID`` beside the node key, or a derived relationship type
  that equals a label in any case — e.g. a ``paper`` key listing papers gives ``PAPER`` beside
  the label ``Paper`` — are errors naming both).

Nodes
    ``<type>_nodes`` -> label ``to_label(<type>)``: ``paper_nodes`` -> ``Paper``,
    ``Biological_Process_nodes`` -> ``BiologicalProcess``, ``opinion_cluster_nodes`` ->
    ``OpinionCluster``. Features become properties (names sanitised: ``first name`` ->
    ``first_name``); scalars and homogeneous lists of scalars are kept, anything else is
    JSON-encoded to a string; ``""`` (GRBench's "missing") becomes null. A feature called ``id``
    is dropped: the node key is the id. (The format has no relationship properties.)

Relationships — each neighbor list entry ``(node N of type S) --key--> (id X)``:

1. The target label is the type whose ``<type>_nodes`` holds ``X``; an id found in no table is an
   error (or skipped with ``missing_neighbors="skip"``: real dumps cite papers outside the dump).
2. The relationship type and direction come from ``key`` by the first rule that applies:

   a. Inverse keys are turned around: ``cited_by`` on N listing X is read as X ``reference`` N.
   b. Hetionet-style keys ``"<A>-<verb>-<B>"`` (biomedical): type ``VERB``
      (``Compound-binds-Gene`` -> ``BINDS``), direction A -> B whichever end stores the entry.
   c. A key naming the target's own type (``author`` on a paper, ``paper`` on an author): one
      relationship type per pair of labels, in a canonical direction, so the reciprocal lists
      ``author.paper`` / ``paper.author`` collapse into one set of relationships. Known pairs:
      Author-WROTE->Paper, Paper-PUBLISHED_IN->Venue, Item-MADE_BY->Brand, Author-WROTE->Book,
      Book-PUBLISHED_BY->Publisher, Book-IN_SERIES->Series, Opinion-IN_CLUSTER->OpinionCluster,
      OpinionCluster-IN_DOCKET->Docket, Docket-FILED_IN->Court. Any other pair: ``<A>_<B>``
      from the type listed first in the file to the other.
   d. Any other key names the relation: ``reference`` -> ``CITES``; otherwise the key minus a
      trailing ``_<target type>`` / ``_<target type>s``, upper-snake-cased
      (``also_viewed_item`` -> ``ALSO_VIEWED``, ``similar_books`` -> ``SIMILAR``); direction
      N -> X.

3. Each (type, source, target) is kept once. A relationship type between nodes of one label
   whose lists are fully reciprocal (every a -> b also has b -> a, e.g. Amazon's
   ``also_viewed_item`` or Hetionet's both-direction ``Gene-interacts-Gene``) is symmetric:
   one relationship per pair, in the direction first seen in the file.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.graph.errors import GraphError, ImportFormatError
from components.graph.model import CatalogNames, GraphData
from components.graph.sources._common import (
    INT64_MAX,
    INT64_MIN,
    check_graph,
    describe,
    normalize_value,
    reserved_name,
    sanitize_identifier,
    to_label,
    to_rel_type,
    value_problem,
)

__all__ = ["KNOWN_PAIRS", "MAX_JSON_DEPTH", "read_grbench"]

MAX_JSON_DEPTH = 100
"""Deepest nesting of JSON arrays/objects accepted (the document's top object is level 1)."""

_NODE_KEYS = frozenset({"features", "neighbors"})

log = logging.getLogger(__name__)

_SUFFIX = "_nodes"

# unordered pair of type names -> (relationship type, type name of the source end)
KNOWN_PAIRS: dict[frozenset[str], tuple[str, str]] = {
    frozenset({"author", "paper"}): ("WROTE", "author"),
    frozenset({"paper", "venue"}): ("PUBLISHED_IN", "paper"),
    frozenset({"item", "brand"}): ("MADE_BY", "item"),
    frozenset({"author", "book"}): ("WROTE", "author"),
    frozenset({"book", "publisher"}): ("PUBLISHED_BY", "book"),
    frozenset({"book", "series"}): ("IN_SERIES", "book"),
    frozenset({"opinion", "opinion_cluster"}): ("IN_CLUSTER", "opinion"),
    frozenset({"opinion_cluster", "docket"}): ("IN_DOCKET", "opinion_cluster"),
    frozenset({"docket", "court"}): ("FILED_IN", "docket"),
}
_INVERSE_KEYS = {"cited_by": "reference"}
_KEY_ALIASES = {"reference": "CITES"}

EdgeKey = tuple[str, str, str, str]  # (src label, src id, dst label, dst id)


@dataclass(frozen=True)
class _NodeType:
    key: str  # "paper_nodes"
    name: str  # normalised type name: "paper", "biological_process"
    label: str  # "Paper"
    order: int  # position in the file
    nodes: Mapping[str, Any]


def _norm(name: str) -> str:
    return "_".join(name.replace("-", " ").replace("_", " ").lower().split())


class _DupDict(dict):  # type: ignore[type-arg]
    """A JSON object that repeated a key (``duplicate`` names it); reported where it is used."""

    duplicate: str


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        obj = _DupDict(obj)
        obj.duplicate = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
    return obj


class _BadNumber(ValueError):
    """A number literal no column type holds exactly; ``literal`` is its text."""

    def __init__(self, message: str, literal: str) -> None:
        super().__init__(message)
        self.literal = literal


def _constant(name: str) -> Any:
    raise _BadNumber(f"{name} is not a JSON value (use null or a string)", name)


def _int(text: str) -> int:
    if len(text.lstrip("-")) > 19 or not INT64_MIN <= int(text) <= INT64_MAX:
        shown = text if len(text) <= 40 else f"{text[:20]}…({len(text)} digits)"
        raise _BadNumber(f"integer {shown} does not fit INT64 (-2**63 .. 2**63-1)", text)
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BadNumber(f"number {text[:40]} is out of range for a double", text)
    return value


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|-?Infinity|NaN')
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _locate(text: str, *, depth: int | None = None, literal: str | None = None) -> int | None:
    """Line of the first bracket nested deeper than ``depth``, or of the first number / constant
    token ``literal`` — one linear pass, only on the error path."""
    level = 0
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok[0] in "[{":
            level += 1
            if depth is not None and level > depth:
                return _line_at(text, m.start())
        elif tok[0] in "]}":
            level -= 1
        elif tok == literal:
            return _line_at(text, m.start())
    return None


def _load_json(path: Path) -> tuple[Any, str, bool]:
    """The parsed document, the file name to report, and whether the text holds ``\\ud8xx``-style
    escapes (so strings must be checked for lone surrogates)."""
    if path.is_dir():
        path = path / "graph.json"
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ImportFormatError("no such file", path=where) from None
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"not UTF-8 text: {exc.reason}", path=where) from None
    except OSError as exc:
        raise ImportFormatError(f"cannot read the file: {exc.strerror or exc}", path=where) from None
    if not text.strip():
        raise ImportFormatError("the file is empty (expected a JSON object of '<type>_nodes' tables)", path=where)
    try:
        raw = json.loads(text, object_pairs_hook=_object, parse_constant=_constant, parse_int=_int, parse_float=_float)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=where, line=exc.lineno) from None
    except _BadNumber as exc:
        raise ImportFormatError(str(exc), path=where, line=_locate(text, literal=exc.literal)) from None
    except RecursionError:
        raise ImportFormatError(
            f"JSON nested more than {MAX_JSON_DEPTH} levels deep",
            path=where,
            line=_locate(text, depth=MAX_JSON_DEPTH),
        ) from None
    return raw, where, _SURROGATE_ESCAPE.search(text) is not None


def _no_duplicate(obj: Any, at: str, where: str, what: str = "key") -> None:
    if isinstance(obj, _DupDict):
        raise ImportFormatError(f"{at}: duplicate {what} {describe(obj.duplicate)}", path=where)


def _check_nested(value: Any, at: str, depth: int, where: str, check_strings: bool) -> None:
    """Walk a feature value (iteratively): depth limit, duplicate keys, lone surrogates."""
    todo = [(value, at, depth)]
    while todo:
        item, item_at, level = todo.pop()
        if isinstance(item, (dict, list)):
            if level > MAX_JSON_DEPTH:
                raise ImportFormatError(f"{at}: JSON nested more than {MAX_JSON_DEPTH} levels deep", path=where)
            if isinstance(item, dict):
                _no_duplicate(item, item_at, where)
                todo.extend((v, f"{item_at}/{k}", level + 1) for k, v in item.items())
                if check_strings:
                    todo.extend((k, item_at, level + 1) for k in item)
            else:
                todo.extend((v, f"{item_at}/{i}", level + 1) for i, v in enumerate(item))
        elif check_strings and isinstance(item, str) and value_problem(item):
            raise ImportFormatError(f"{item_at}: {value_problem(item)}", path=where)


def _node_types(raw: Any, where: str, names: CatalogNames) -> list[_NodeType]:
    if not isinstance(raw, dict) or not raw:
        raise ImportFormatError("expected a JSON object of '<type>_nodes' tables", path=where)
    _no_duplicate(raw, "top level", where)
    types: list[_NodeType] = []
    labels: dict[str, str] = {}
    for order, (key, nodes) in enumerate(raw.items()):
        if not key.endswith(_SUFFIX) or len(key) == len(_SUFFIX):
            raise ImportFormatError(f"top-level key {describe(key)} is not '<type>_nodes'", path=where)
        if not isinstance(nodes, dict):
            raise ImportFormatError(f"{key} must be an object of nodes by id", path=where)
        _no_duplicate(nodes, key, where, "node id")
        name = key[: -len(_SUFFIX)]
        label = _named(lambda: to_label(name), key, where)
        if label in labels:
            raise ImportFormatError(f"{key} and {labels[label]} both map to label {label}", path=where)
        labels[label] = key
        _named(lambda: names.table(label, "label"), key, where)
        types.append(_NodeType(key, _norm(name), label, order, nodes))
    return types


def _named(make: Any, at: str, where: str) -> Any:
    """Run a naming step; its error gets the JSON path."""
    try:
        return make()
    except GraphError as exc:
        raise ImportFormatError(f"{at}: {exc.message}", path=where) from None


def _index_ids(types: list[_NodeType], where: str, check_strings: bool) -> dict[str, _NodeType]:
    index: dict[str, _NodeType] = {}
    for nt in types:
        for node_id in nt.nodes:
            if node_id == "":
                raise ImportFormatError(f"{nt.key}: empty node id", path=where)
            if check_strings and value_problem(node_id):
                raise ImportFormatError(f"{nt.key}: node id: {value_problem(node_id)}", path=where)
            other = index.setdefault(node_id, nt)
            if other is not nt:
                raise ImportFormatError(
                    f"node id {describe(node_id)} appears in both {other.key} and {nt.key}", path=where
                )
    return index


def _check_node(node: Any, at: str, where: str) -> None:
    if not isinstance(node, dict):
        raise ImportFormatError(f"{at}: a node must be an object", path=where)
    _no_duplicate(node, at, where)
    extra = sorted(set(node) - _NODE_KEYS)
    if extra:
        raise ImportFormatError(
            f"{at}: unknown key {describe(extra[0])} (a node holds only 'features' and 'neighbors')",
            path=where,
        )


def _section(node: dict[str, Any], name: str, at: str, where: str) -> dict[str, Any]:
    value = node.get(name, {})
    if not isinstance(value, dict):
        raise ImportFormatError(f"{at}/{name} must be an object", path=where)
    _no_duplicate(value, f"{at}/{name}", where)
    return value


def _properties(features: dict[str, Any], at: str, where: str, check_strings: bool) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for raw_name, value in features.items():
        here = f"{at}/features/{_short(raw_name)}"
        name = _named(lambda: sanitize_identifier(raw_name, "property name"), here, where)
        if name in props:
            raise ImportFormatError(f"{at}: two features map to property {name!r}", path=where)
        if isinstance(value, (dict, list)):
            _check_nested(value, here, 5, where, check_strings)
        problem = value_problem(value) if not isinstance(value, dict) else None
        if problem:
            raise ImportFormatError(f"{here}: {problem}", path=where)
        props[name] = None if value == "" else normalize_value(value)
    return props


class _Resolver:
    """Maps (source type, neighbor key, target type) to (relationship type, reversed?)."""

    def __init__(self, types: list[_NodeType], where: str) -> None:
        self._by_name = {nt.name: nt for nt in types}
        self._where = where
        self._memo: dict[tuple[str, str, str], tuple[str, bool]] = {}

    def __call__(self, src: _NodeType, key: str, dst: _NodeType) -> tuple[str, bool]:
        memo_key = (src.name, key, dst.name)
        if memo_key not in self._memo:
            self._memo[memo_key] = self._resolve(src, key, dst)
        return self._memo[memo_key]

    def _resolve(self, src: _NodeType, key: str, dst: _NodeType) -> tuple[str, bool]:
        if _norm(key) in _INVERSE_KEYS:
            rtype, reverse = self(dst, _INVERSE_KEYS[_norm(key)], src)
            return rtype, not reverse
        parts = key.split("-")
        if len(parts) == 3 and {_norm(parts[0]), _norm(parts[2])} <= self._by_name.keys():
            return self._hetionet(src, parts, dst)
        if _norm(key) == dst.name and src.name != dst.name:
            return self._pair(src, dst)
        if _norm(key) in _KEY_ALIASES:
            return _KEY_ALIASES[_norm(key)], False
        name = _norm(key)
        for suffix in (f"_{dst.name}", f"_{dst.name}s"):
            if name.endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                break
        return to_rel_type(name, self._where), False

    def _hetionet(self, src: _NodeType, parts: list[str], dst: _NodeType) -> tuple[str, bool]:
        a, b = _norm(parts[0]), _norm(parts[2])
        rtype = to_rel_type(parts[1], self._where)
        if (src.name, dst.name) == (a, b):
            return rtype, False
        if (src.name, dst.name) == (b, a):
            return rtype, True
        raise ImportFormatError(
            f"neighbor list {'-'.join(parts)!r} on a {src.label} node lists a {dst.label} node",
            path=self._where,
        )

    @staticmethod
    def _pair(src: _NodeType, dst: _NodeType) -> tuple[str, bool]:
        known = KNOWN_PAIRS.get(frozenset({src.name, dst.name}))
        if known is not None:
            return known[0], known[1] != src.name
        first, second = sorted((src, dst), key=lambda nt: nt.order)
        return to_rel_type(f"{first.name} {second.name}"), first is not src


class _Edges:
    """Relationships by type, deduplicated, in first-seen order."""

    def __init__(self) -> None:
        self.by_type: dict[str, dict[EdgeKey, None]] = {}

    def add(self, rtype: str, edge: EdgeKey) -> None:
        self.by_type.setdefault(rtype, {})[edge] = None

    def emit(self, graph: GraphData) -> None:
        for rtype, edges in self.by_type.items():
            for sl, si, dl, di in _drop_symmetric_duplicates(edges):
                graph.add_rel(rtype, (sl, si), (dl, di))


def _drop_symmetric_duplicates(edges: dict[EdgeKey, None]) -> list[EdgeKey]:
    """Keep one direction per pair for each label whose same-label edges are fully reciprocal."""
    reciprocal: dict[str, bool] = {}
    for sl, si, dl, di in edges:
        if sl == dl and reciprocal.get(sl, True):
            reciprocal[sl] = (dl, di, sl, si) in edges
    out: list[EdgeKey] = []
    kept: set[EdgeKey] = set()
    for edge in edges:
        sl, si, dl, di = edge
        if sl == dl and reciprocal.get(sl) and (dl, di, sl, si) in kept:
            continue
        kept.add(edge)
        out.append(edge)
    return out


def read_grbench(path: str | Path, *, missing_neighbors: str = "error") -> GraphData:
    """Read a GRBench ``graph.json`` (see the module docstring for the mapping).

    ``missing_neighbors``: ``"error"`` (default) raises on a neighbor id that is in no
    ``<type>_nodes`` table; ``"skip"`` drops such entries and logs how many were dropped.
    """
    if missing_neighbors not in ("error", "skip"):
        raise ImportFormatError(f"missing_neighbors must be 'error' or 'skip', not {missing_neighbors!r}")
    raw, where, check_strings = _load_json(Path(path))
    names = CatalogNames()
    types = _node_types(raw, where, names)
    reader = _Reader(types, where, names, skip_missing=missing_neighbors == "skip", check_strings=check_strings)
    for nt in types:
        for node_id, node in nt.nodes.items():
            reader.add(nt, node_id, node)
    return reader.result()


class _Reader:
    """Accumulates nodes and (deduplicated) relationships, one GRBench node at a time."""

    def __init__(
        self,
        types: list[_NodeType],
        where: str,
        names: CatalogNames,
        *,
        skip_missing: bool,
        check_strings: bool,
    ) -> None:
        self.where = where
        self.names = names
        self.check_strings = check_strings
        self.index = _index_ids(types, where, check_strings)
        self.resolve = _Resolver(types, where)
        self.skip_missing = skip_missing
        self.skipped = 0
        self.graph = GraphData()
        self.edges = _Edges()
        self.rel_types: set[str] = set()

    def add(self, nt: _NodeType, node_id: str, node: Any) -> None:
        at, where = f"{nt.key}/{_short(node_id)}", self.where
        _check_node(node, at, where)
        props = _properties(_section(node, "features", at, where), at, where, self.check_strings)
        for name in props:
            _named(lambda: self.names.column(nt.label, name), f"{at}/features", where)
        self.graph.add_node(nt.label, node_id, props)
        for key, ids in _section(node, "neighbors", at, where).items():
            here = f"{at}/neighbors/{_short(key)}"
            if reserved_name(key):
                raise ImportFormatError(
                    f"{here}: neighbor key {describe(key)} starts with '_' (reserved for internal keys)",
                    path=where,
                )
            if not isinstance(ids, list):
                raise ImportFormatError(f"{here} must be a list of ids", path=where)
            for raw_id in ids:
                other = _id_text(raw_id, here, where)
                if self.check_strings and value_problem(other):
                    raise ImportFormatError(f"{here}: neighbor id: {value_problem(other)}", path=where)
                self._add_edge(nt, node_id, key, other, here)

    def _add_edge(self, nt: _NodeType, node_id: str, key: str, other: str, at: str) -> None:
        target = self.index.get(other)
        if target is None:
            if self.skip_missing:
                self.skipped += 1
                return
            raise ImportFormatError(f"{at}: unknown node id {other!r} (in no *_nodes table)", path=self.where)
        rtype, reverse = _named(lambda: self.resolve(nt, key, target), at, self.where)
        if rtype not in self.rel_types:
            _named(lambda: self.names.table(rtype, "relationship type"), at, self.where)
            self.rel_types.add(rtype)
        a, b = (nt.label, node_id), (target.label, other)
        self.edges.add(rtype, (*b, *a) if reverse else (*a, *b))

    def result(self) -> GraphData:
        if self.skipped:
            log.warning("%s: skipped %d neighbor ids found in no *_nodes table", self.where, self.skipped)
        self.edges.emit(self.graph)
        return check_graph(self.graph, self.where, "the file is empty: its '<type>_nodes' tables hold no nodes")


def _short(key: str) -> str:
    """A JSON key as shown in a JSON path (long keys cut)."""
    return key if len(key) <= 60 else f"{key[:50]}…"


def _id_text(raw_id: Any, at: str, where: str) -> str:
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        raise ImportFormatError(f"{at}: neighbor id {describe(raw_id)} is not a string", path=where)
    return str(raw_id)
