"""The typed schema of a property graph, including relationship *directions*.

A relationship type is known together with the ``(source label, type, target label)`` triples it
actually connects, so a query's direction can be checked statically (a wrong-direction pattern
returns an empty result on every engine instead of an error).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from components.graph.errors import SchemaError

__all__ = ["GraphSchema", "NodeLabel", "RelType", "Triple", "quote_identifier"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def quote_identifier(name: str) -> str:
    """Backtick-quote a catalog identifier (label, type, property) for Cypher text.

    Identifiers cannot be parameters in Cypher; only names matching ``[A-Za-z_]\\w*`` are
    accepted, so quoting cannot be escaped.
    """
    if not _IDENT.match(name):
        raise SchemaError(f"invalid identifier {name!r}")
    return f"`{name}`"


@dataclass(frozen=True, order=True)
class Triple:
    source: str
    type: str
    target: str
    count: int = field(default=0, compare=False)


@dataclass(frozen=True)
class NodeLabel:
    label: str
    properties: Mapping[str, str]  # name -> type, primary key included
    primary_key: str = "id"
    count: int = 0


@dataclass(frozen=True)
class RelType:
    type: str
    triples: tuple[Triple, ...]
    properties: Mapping[str, str] = field(default_factory=dict)
    count: int = 0


@dataclass(frozen=True)
class GraphSchema:
    node_labels: tuple[NodeLabel, ...]
    rel_types: tuple[RelType, ...]

    # -- lookups -------------------------------------------------------------------------
    @property
    def labels(self) -> dict[str, NodeLabel]:
        return {n.label: n for n in self.node_labels}

    @property
    def types(self) -> dict[str, RelType]:
        return {r.type: r for r in self.rel_types}

    def triples(self) -> frozenset[tuple[str, str, str]]:
        return frozenset((t.source, t.type, t.target) for r in self.rel_types for t in r.triples)

    def has_triple(self, source: str | None, rel_type: str, target: str | None) -> bool:
        """True when some schema triple matches; ``None`` stands for an unlabelled endpoint."""
        return any(
            t == rel_type and (source is None or s == source) and (target is None or d == target)
            for s, t, d in self.triples()
        )

    def property_type(self, owner: str, prop: str) -> str | None:
        item = self.labels.get(owner) or self.types.get(owner)
        return None if item is None else item.properties.get(prop)

    @property
    def node_count(self) -> int:
        return sum(n.count for n in self.node_labels)

    @property
    def rel_count(self) -> int:
        return sum(r.count for r in self.rel_types)

    # -- renderings ----------------------------------------------------------------------
    def to_text(self, *, counts: bool = True) -> str:
        """Compact rendering for prompts, one line per label and per triple::

        (:Author {id: STRING, name: STRING}) x120
        (:Author)-[:WROTE {position: INT64}]->(:Paper) x300
        """
        lines = ["Node labels:"]
        for n in self.node_labels:
            props = ", ".join(f"{k}: {v}" for k, v in n.properties.items())
            lines.append(f"  (:{n.label} {{{props}}})" + (f" x{n.count}" if counts else ""))
        lines.append("Relationships (direction matters):")
        for r in self.rel_types:
            props = ", ".join(f"{k}: {v}" for k, v in r.properties.items())
            props = f" {{{props}}}" if props else ""
            for t in r.triples:
                lines.append(f"  (:{t.source})-[:{r.type}{props}]->(:{t.target})" + (f" x{t.count}" if counts else ""))
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "node_labels": [
                {
                    "label": n.label,
                    "primary_key": n.primary_key,
                    "properties": dict(n.properties),
                    "count": n.count,
                }
                for n in self.node_labels
            ],
            "relationship_types": [
                {
                    "type": r.type,
                    "properties": dict(r.properties),
                    "count": r.count,
                    "triples": [{"source": t.source, "target": t.target, "count": t.count} for t in r.triples],
                }
                for r in self.rel_types
            ],
            "node_count": self.node_count,
            "relationship_count": self.rel_count,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> GraphSchema:
        if isinstance(data, str):
            data = json.loads(data)
        nodes = tuple(
            NodeLabel(n["label"], dict(n["properties"]), n.get("primary_key", "id"), n.get("count", 0))
            for n in data["node_labels"]
        )
        rels = tuple(
            RelType(
                r["type"],
                tuple(Triple(t["source"], r["type"], t["target"], t.get("count", 0)) for t in r["triples"]),
                dict(r.get("properties", {})),
                r.get("count", 0),
            )
            for r in data["relationship_types"]
        )
        return cls(nodes, rels)

    @classmethod
    def build(cls, node_labels: Iterable[NodeLabel], rel_types: Iterable[RelType]) -> GraphSchema:
        """Canonical order (sorted by name) so equal graphs give equal schemas."""
        rels = tuple(
            RelType(r.type, tuple(sorted(r.triples)), dict(r.properties), r.count)
            for r in sorted(rel_types, key=lambda r: r.type)
        )
        return cls(tuple(sorted(node_labels, key=lambda n: n.label)), rels)
