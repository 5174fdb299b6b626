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
    "CatalogNames",
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


RESERVED_PREFIX_REASON = (
    "names starting with '_' are reserved for internal keys (the query layer drops such keys "
    "from results, so the data would be invisible)"
)


def validate_identifier(name: str, what: str = "identifier") -> str:
    """Labels, relationship types and property names become table/column names: only
    ``[A-Za-z_][A-Za-z0-9_]*`` is accepted (no quoting games), and ``_``-prefixed names are
    reserved for internal keys."""
    if not isinstance(name, str) or not name or name[0].isdigit() or not set(name) <= _IDENT_OK:
        raise ImportFormatError(f"invalid {what} {name!r}: use letters, digits and '_' only")
    if name.startswith("_"):
        raise ImportFormatError(f"invalid {what} {name!r}: {RESERVED_PREFIX_REASON}")
    return name


class CatalogNames:
    """The embedded engine's catalog rules, checked before any table is created.

    Ladybug (like Kùzu) compares table and column names case-insensitively, and node and
    relationship tables share one namespace. So two labels ``Person`` / ``person``, a label and a
    relationship type ``Knows`` / ``KNOWS``, or two properties ``name`` / ``Name`` of one label or
    type cannot coexist; neither can a node property ``ID`` beside the node key ``id``. Each
    importer registers names as it meets them (so its error names the file and line) and
    :func:`~components.graph.load.load_graph` checks every graph once more.

    >>> names = CatalogNames()
    >>> names.table("Person", "label")
    >>> names.table("PERSON", "label")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    components.graph.errors.ImportFormatError: labels 'Person' and 'PERSON' differ only in case ...
    """

    def __init__(self) -> None:
        self._tables: dict[str, tuple[str, str]] = {}  # lower-cased name -> (name, kind)
        self._columns: dict[str, dict[str, str]] = {}  # table -> lower-cased column -> column

    def table(self, name: str, kind: str, path: str | None = None, line: int | None = None) -> None:
        """Register a node table (``kind="label"``) or a relationship table
        (``kind="relationship type"``)."""
        seen = self._tables.setdefault(name.lower(), (name, kind))
        if seen == (name, kind):
            self._columns.setdefault(name, {"id": "id"} if kind == "label" else {})
            return
        other, other_kind = seen
        if other_kind == kind:
            message = (
                f"{kind}s {other!r} and {name!r} differ only in case: the graph engine's "
                f"table names are case-insensitive, so they would be one table"
            )
        else:
            same = "have the same name" if other == name else "differ only in case"
            message = (
                f"{other_kind} {other!r} and {kind} {name!r} {same}: node labels and "
                "relationship types share one case-insensitive namespace in the graph engine"
            )
        raise ImportFormatError(message, path=path, line=line)

    def column(self, table: str, name: str, path: str | None = None, line: int | None = None) -> None:
        """Register property ``name`` of ``table`` (registered before)."""
        columns = self._columns[table]
        seen = columns.setdefault(name.lower(), name)
        if seen == name:
            return
        if seen == "id" and "id" in columns and self._tables[table.lower()][1] == "label":
            message = (
                f"property {name!r} of {table} clashes with the node key 'id': the graph "
                "engine's column names are case-insensitive"
            )
        else:
            message = (
                f"properties {seen!r} and {name!r} of {table} differ only in case: the graph "
                "engine's column names are case-insensitive"
            )
        raise ImportFormatError(message, path=path, line=line)

    @classmethod
    def check(cls, graph: GraphData, path: str | None = None) -> None:
        """Register every label, relationship type and property of ``graph``."""
        names = cls()
        for label, ns in graph.nodes.items():
            names.table(label, "label", path)
            for row in ns.rows:
                for key in row:
                    if key != "id":
                        names.column(label, key, path)
        for rtype, rs in graph.rels.items():
            names.table(rtype, "relationship type", path)
            for rel in rs.rows:
                for key in rel.properties:
                    names.column(rtype, key, path)


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
            rs.properties = {n: infer_property_type(r.properties.get(n) for r in rs.rows) for n in names}
        return self

    @property
    def node_count(self) -> int:
        return sum(len(ns.rows) for ns in self.nodes.values())

    @property
    def rel_count(self) -> int:
        return sum(len(rs.rows) for rs in self.rels.values())
