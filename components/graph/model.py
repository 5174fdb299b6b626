"""In-memory graph data exchanged between importers (``sources/``) and the Ladybug loader.

Every importer produces a :class:`GraphData`; one loader (:mod:`components.graph.load`) writes it
into a Ladybug database folder. Nodes are keyed by a string ``id`` (the primary key of every node
table), unique within a label. Property types use Ladybug's type names (see ``PROPERTY_TYPES``).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from components.graph.errors import ImportFormatError

__all__ = [
    "PROPERTY_TYPES",
    "GraphData",
    "NodeSet",
    "Rel",
    "RelSet",
    "infer_property_type",
    "validate_identifier",
]

PROPERTY_TYPES = (
    "STRING",
    "INT64",
    "DOUBLE",
    "BOOLEAN",
    "DATE",
    "TIMESTAMP",
    "STRING[]",
    "INT64[]",
    "DOUBLE[]",
)

_IDENT_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def validate_identifier(name: str, what: str = "identifier") -> str:
    """Labels, relationship types and property names become table/column names: only
    ``[A-Za-z_][A-Za-z0-9_]*`` is accepted (no quoting games), and ``_``-prefixed names are
    reserved for the engine."""
    if not isinstance(name, str) or not name or name[0].isdigit() or not set(name) <= _IDENT_OK:
        raise ImportFormatError(f"invalid {what} {name!r}: use letters, digits and '_' only")
    if name.startswith("_"):
        raise ImportFormatError(f"invalid {what} {name!r}: names starting with '_' are reserved")
    return name


def _scalar_type(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "INT64"
    if isinstance(value, float):
        return "DOUBLE"
    if isinstance(value, _dt.datetime):
        return "TIMESTAMP"
    if isinstance(value, _dt.date):
        return "DATE"
    if isinstance(value, str):
        return "STRING"
    raise ImportFormatError(f"unsupported property value {value!r} of type {type(value).__name__}")


def infer_property_type(values: Iterable[Any]) -> str:
    """The narrowest Ladybug type that holds every non-null value.

    INT64 widens to DOUBLE when floats are mixed in; any other mix falls back to STRING.
    Lists become ``T[]`` with ``T`` inferred over all their elements.

    >>> infer_property_type([1, 2.5, None])
    'DOUBLE'
    >>> infer_property_type([["a"], []])
    'STRING[]'
    """
    seen: set[str] = set()
    for v in values:
        if isinstance(v, (list, tuple)):
            inner = {_scalar_type(x) for x in v} - {None}
            if inner and inner <= {"INT64", "DOUBLE"} and "DOUBLE" in inner:
                inner = {"DOUBLE"}
            seen.add(f"{inner.pop()}[]" if len(inner) == 1 else "STRING[]")
        else:
            t = _scalar_type(v)
            if t is not None:
                seen.add(t)
    if not seen:
        return "STRING"
    if len(seen) == 1:
        return seen.pop()
    if seen == {"INT64", "DOUBLE"}:
        return "DOUBLE"
    if seen == {"INT64[]", "DOUBLE[]"}:
        return "DOUBLE[]"
    if all(s.endswith("[]") for s in seen):
        return "STRING[]"
    return "STRING"


class Rel(NamedTuple):
    src_label: str
    src_id: str
    dst_label: str
    dst_id: str
    properties: Mapping[str, Any]


@dataclass
class NodeSet:
    """All nodes of one label. ``properties`` maps name -> type and excludes ``id``."""

    label: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)


@dataclass
class RelSet:
    """All relationships of one type (possibly between several label pairs)."""

    type: str
    rows: list[Rel] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)


@dataclass
class GraphData:
    nodes: dict[str, NodeSet] = field(default_factory=dict)
    rels: dict[str, RelSet] = field(default_factory=dict)

    def add_node(self, label: str, node_id: str, properties: Mapping[str, Any] | None = None) -> None:
        ns = self.nodes.get(label)
        if ns is None:
            ns = self.nodes[label] = NodeSet(validate_identifier(label, "label"))
        row = {"id": str(node_id)}
        for k, v in (properties or {}).items():
            if k == "id":
                continue
            row[validate_identifier(k, "property name")] = v
        ns.rows.append(row)

    def add_rel(
        self,
        rel_type: str,
        src: tuple[str, str],
        dst: tuple[str, str],
        properties: Mapping[str, Any] | None = None,
    ) -> None:
        rs = self.rels.get(rel_type)
        if rs is None:
            rs = self.rels[rel_type] = RelSet(validate_identifier(rel_type, "relationship type"))
        props = {validate_identifier(k, "property name"): v for k, v in (properties or {}).items()}
        rs.rows.append(Rel(src[0], str(src[1]), dst[0], str(dst[1]), props))

    def infer_types(self) -> GraphData:
        """Fill ``properties`` of every node and relationship set from the values present."""
        for ns in self.nodes.values():
            names: dict[str, None] = {}
            for row in ns.rows:
                names.update(dict.fromkeys(k for k in row if k != "id"))
            ns.properties = {n: infer_property_type(r.get(n) for r in ns.rows) for n in names}
        for rs in self.rels.values():
            names = {}
            for rel in rs.rows:
                names.update(dict.fromkeys(rel.properties))
            rs.properties = {
                n: infer_property_type(r.properties.get(n) for r in rs.rows) for n in names
            }
        return self

    @property
    def node_count(self) -> int:
        return sum(len(ns.rows) for ns in self.nodes.values())

    @property
    def rel_count(self) -> int:
        return sum(len(rs.rows) for rs in self.rels.values())
