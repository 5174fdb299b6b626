"""Import a GRBench / Graph-CoT ``graph.json`` into :class:`GraphData`.

Input shape (as written by Graph-CoT's ``raw_process`` notebooks)::

    {"<type>_nodes": {"<node id>": {"features": {...}, "neighbors": {"<neighbor type>": [ids]}}}}

``SRC`` is the file, or a folder holding ``graph.json``. Node ids are strings (unique across the
whole file, as Graph-CoT itself asserts).

Nodes
    ``<type>_nodes`` -> label ``to_label(<type>)``: ``paper_nodes`` -> ``Paper``,
    ``Biological_Process_nodes`` -> ``BiologicalProcess``, ``opinion_cluster_nodes`` ->
    ``OpinionCluster``. Features become properties (names sanitised: ``first name`` ->
    ``first_name``); scalars and homogeneous lists of scalars are kept, anything else is
    JSON-encoded to a string; ``""`` (GRBench's "missing") becomes null. A feature called ``id``
    is dropped: the node key is the id.

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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.graph.errors import ImportFormatError
from components.graph.model import GraphData
from components.graph.sources._common import (
    check_graph,
    normalize_value,
    sanitize_identifier,
    to_label,
    to_rel_type,
)

__all__ = ["KNOWN_PAIRS", "read_grbench"]

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


def _load_json(path: Path) -> Any:
    if path.is_dir():
        path = path / "graph.json"
    try:
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise ImportFormatError("no such file", path=str(path)) from None
    except json.JSONDecodeError as exc:
        raise ImportFormatError(
            f"invalid JSON: {exc.msg} (column {exc.colno})", path=str(path), line=exc.lineno
        ) from None
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"not UTF-8 text: {exc.reason}", path=str(path)) from None


def _node_types(raw: Any, where: str) -> list[_NodeType]:
    if not isinstance(raw, dict) or not raw:
        raise ImportFormatError("expected a JSON object of '<type>_nodes' tables", path=where)
    types: list[_NodeType] = []
    labels: dict[str, str] = {}
    for order, (key, nodes) in enumerate(raw.items()):
        if not key.endswith(_SUFFIX) or len(key) == len(_SUFFIX):
            raise ImportFormatError(f"top-level key {key!r} is not '<type>_nodes'", path=where)
        if not isinstance(nodes, dict):
            raise ImportFormatError(f"{key} must be an object of nodes by id", path=where)
        name = key[: -len(_SUFFIX)]
        label = to_label(name, where)
        if label in labels:
            raise ImportFormatError(
                f"{key} and {labels[label]} both map to label {label}", path=where
            )
        labels[label] = key
        types.append(_NodeType(key, _norm(name), label, order, nodes))
    return types


def _index_ids(types: list[_NodeType], where: str) -> dict[str, _NodeType]:
    index: dict[str, _NodeType] = {}
    for nt in types:
        for node_id in nt.nodes:
            other = index.setdefault(node_id, nt)
            if other is not nt:
                raise ImportFormatError(
                    f"node id {node_id!r} appears in both {other.key} and {nt.key}", path=where
                )
    return index


def _section(node: Any, name: str, at: str, where: str) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise ImportFormatError(f"{at}: a node must be an object", path=where)
    value = node.get(name, {})
    if not isinstance(value, dict):
        raise ImportFormatError(f"{at}/{name} must be an object", path=where)
    return value


def _properties(features: dict[str, Any], at: str, where: str) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for raw_name, value in features.items():
        name = sanitize_identifier(raw_name, "property name", where)
        if name in props:
            raise ImportFormatError(f"{at}: two features map to property {name!r}", path=where)
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
        return f"{first.name}_{second.name}".upper(), first is not src


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
        raise ImportFormatError(
            f"missing_neighbors must be 'error' or 'skip', not {missing_neighbors!r}"
        )
    where = str(path)
    types = _node_types(_load_json(Path(path)), where)
    reader = _Reader(types, where, skip_missing=missing_neighbors == "skip")
    for nt in types:
        for node_id, node in nt.nodes.items():
            reader.add(nt, node_id, node)
    return reader.result()


class _Reader:
    """Accumulates nodes and (deduplicated) relationships, one GRBench node at a time."""

    def __init__(self, types: list[_NodeType], where: str, *, skip_missing: bool) -> None:
        self.where = where
        self.index = _index_ids(types, where)
        self.resolve = _Resolver(types, where)
        self.skip_missing = skip_missing
        self.skipped = 0
        self.graph = GraphData()
        self.edges = _Edges()

    def add(self, nt: _NodeType, node_id: str, node: Any) -> None:
        at, where = f"{nt.key}/{node_id}", self.where
        features = _section(node, "features", at, where)
        self.graph.add_node(nt.label, node_id, _properties(features, at, where))
        for key, ids in _section(node, "neighbors", at, where).items():
            if not isinstance(ids, list):
                raise ImportFormatError(f"{at}/neighbors/{key} must be a list of ids", path=where)
            for raw_id in ids:
                other = _id_text(raw_id, at, where)
                self._add_edge(nt, node_id, key, other, f"{at}/neighbors/{key}")

    def _add_edge(self, nt: _NodeType, node_id: str, key: str, other: str, at: str) -> None:
        target = self.index.get(other)
        if target is None:
            if self.skip_missing:
                self.skipped += 1
                return
            raise ImportFormatError(
                f"{at}: unknown node id {other!r} (in no *_nodes table)", path=self.where
            )
        rtype, reverse = self.resolve(nt, key, target)
        a, b = (nt.label, node_id), (target.label, other)
        self.edges.add(rtype, (*b, *a) if reverse else (*a, *b))

    def result(self) -> GraphData:
        if self.skipped:
            log.warning(
                "%s: skipped %d neighbor ids found in no *_nodes table", self.where, self.skipped
            )
        self.edges.emit(self.graph)
        return check_graph(self.graph, self.where)


def _id_text(raw_id: Any, at: str, where: str) -> str:
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        raise ImportFormatError(f"{at}: neighbor id {raw_id!r} is not a string", path=where)
    return str(raw_id)
