"""Static check of a parsed query against a :class:`~components.graph.schema.GraphSchema`.

Refuses (:class:`SchemaError`, with close matches) unknown node labels, unknown relationship
types, and unknown properties — on variables whose label or type the query's patterns state, on
pattern property maps, and, for unlabelled pattern variables, properties no label or type has.
Ladybug raises a binder error for a property its label does not declare where Neo4j returns
null, so this check keeps both engines in agreement (and gives a better message).

:func:`used_triples` exposes the ``(source label, type, target label)`` triples a query's
patterns use, for the direction check of a later issue (no refusal on direction here).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from cypherast import ast as a

from components.cypher.parse import ParsedQuery, iter_nodes
from components.graph.errors import SchemaError
from components.graph.schema import GraphSchema

__all__ = ["UsedTriple", "check_schema", "used_triples"]


class UsedTriple(NamedTuple):
    """One relationship pattern as a schema triple; ``None`` is an unknown label or type.
    ``directed`` is False for ``-[]-`` (either orientation)."""

    source: str | None
    type: str | None
    target: str | None
    directed: bool


def _suggest(name: str, known: Iterable[str]) -> str:
    names = sorted(known)
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    if close:
        return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
    shown = ", ".join(names[:20]) + (" …" if len(names) > 20 else "")
    return f"; known: {shown}" if names else ""


def _label_names(labels: a.LabelExpression | None) -> list[str]:
    if labels is None:
        return []
    if labels.expression is not None:
        return [p for p in re.split(r"[|&!%()]", str(labels.expression)) if p]
    return [str(lab) for lab in labels.labels or []]


def _patterns(tree: a.AstNode) -> Iterator[a.PathPattern]:
    for node in iter_nodes(tree):
        if isinstance(node, a.PathPattern):
            yield node


def _elements(path: a.PathPattern) -> list[a.AstNode]:
    if len(path.elements) == 1 and isinstance(path.elements[0], a.ShortestPath):
        return list(path.elements[0].this.elements)
    return list(path.elements)


class _Bindings:
    """What the patterns say about each variable: node labels or relationship types."""

    def __init__(self, tree: a.AstNode) -> None:
        self.node_labels: dict[str, set[str]] = {}
        self.rel_types: dict[str, set[str]] = {}
        for path in _patterns(tree):
            for element in _elements(path):
                if isinstance(element, a.NodePattern) and element.variable is not None:
                    names = self.node_labels.setdefault(str(element.variable.this), set())
                    names.update(_label_names(element.labels))
                elif isinstance(element, a.RelationshipPattern) and element.variable is not None:
                    types = self.rel_types.setdefault(str(element.variable.this), set())
                    types.update(element.types or [])
        # WITH n AS m: m is n
        for node in iter_nodes(tree):
            if isinstance(node, a.Alias) and isinstance(node.this, a.Identifier):
                source, target = str(node.this.this), str(node.alias.this)
                if source in self.node_labels:
                    self.node_labels.setdefault(target, set()).update(self.node_labels[source])
                if source in self.rel_types:
                    self.rel_types.setdefault(target, set()).update(self.rel_types[source])

    def labels_of(self, node: a.NodePattern) -> set[str]:
        names = set(_label_names(node.labels))
        if node.variable is not None:
            names |= self.node_labels.get(str(node.variable.this), set())
        return names


class _Checker:
    def __init__(self, schema: GraphSchema, tree: a.AstNode) -> None:
        self.labels = schema.labels
        self.types = schema.types
        self.bindings = _Bindings(tree)
        self.all_node_props = {p for n in schema.node_labels for p in n.properties}
        self.all_rel_props = {p for r in schema.rel_types for p in r.properties}

    def label(self, name: str) -> None:
        if name not in self.labels:
            raise SchemaError(f"unknown node label {name!r}{_suggest(name, self.labels)}")

    def rel_type(self, name: str) -> None:
        if name not in self.types:
            raise SchemaError(f"unknown relationship type {name!r}{_suggest(name, self.types)}")

    def node_property(self, labels: set[str], prop: str) -> None:
        known = [lab for lab in labels if lab in self.labels]
        if known:
            props = {p for lab in known for p in self.labels[lab].properties}
            if prop not in props:
                owner = "|".join(f":{lab}" for lab in sorted(known))
                raise SchemaError(f"unknown property {prop!r} on {owner}{_suggest(prop, props)}")
        elif not labels and prop not in self.all_node_props | self.all_rel_props:
            raise SchemaError(
                f"no node label or relationship type has a property {prop!r}"
                f"{_suggest(prop, self.all_node_props | self.all_rel_props)}"
            )

    def rel_property(self, types: set[str], prop: str) -> None:
        known = [t for t in types if t in self.types]
        if known:
            props = {p for t in known for p in self.types[t].properties}
            if prop not in props:
                owner = "|".join(f":{t}" for t in sorted(known))
                raise SchemaError(f"unknown property {prop!r} on relationship {owner}{_suggest(prop, props)}")
        elif not types and prop not in self.all_rel_props:
            raise SchemaError(f"no relationship type has a property {prop!r}{_suggest(prop, self.all_rel_props)}")

    def run(self, tree: a.AstNode) -> None:
        for node in iter_nodes(tree):
            if isinstance(node, a.NodePattern):
                for name in _label_names(node.labels):
                    self.label(name)
                if isinstance(node.properties, a.Map):
                    labels = self.bindings.labels_of(node)
                    for key, _value in node.properties.entries:
                        self.node_property(labels, str(key))
            elif isinstance(node, a.RelationshipPattern):
                for name in node.types or []:
                    self.rel_type(name)
                if isinstance(node.properties, a.Map):
                    types = set(node.types or [])
                    if node.variable is not None:
                        types |= self.bindings.rel_types.get(str(node.variable.this), set())
                    for key, _value in node.properties.entries:
                        self.rel_property(types, str(key))
            elif isinstance(node, a.LabelPredicate) and isinstance(node.this, a.Identifier):
                is_rel = str(node.this.this) in self.bindings.rel_types
                for name in _label_names(node.labels):
                    (self.rel_type if is_rel else self.label)(name)
            elif isinstance(node, a.Property) and isinstance(node.this, a.Identifier):
                var = str(node.this.this)
                if var in self.bindings.rel_types:
                    self.rel_property(self.bindings.rel_types[var], str(node.name))
                elif var in self.bindings.node_labels:
                    self.node_property(self.bindings.node_labels[var], str(node.name))


def check_schema(parsed: ParsedQuery, schema: GraphSchema) -> None:
    """Raise :class:`SchemaError` for unknown labels, relationship types or properties."""
    _Checker(schema, parsed.tree).run(parsed.tree)


def used_triples(parsed: ParsedQuery) -> list[UsedTriple]:
    """The ``(source, type, target)`` triples the query's relationship patterns use, with the
    endpoint labels the patterns (or earlier patterns of the same variable) state.

    >>> from components.cypher.parse import parse_query
    >>> used_triples(parse_query("MATCH (a:Author)-[:WROTE]->(p) RETURN p"))
    [UsedTriple(source='Author', type='WROTE', target=None, directed=True)]
    """
    bindings = _Bindings(parsed.tree)
    triples: list[UsedTriple] = []
    for path in _patterns(parsed.tree):
        elements = _elements(path)
        for i in range(1, len(elements) - 1, 2):
            left, rel, right = elements[i - 1], elements[i], elements[i + 1]
            if not isinstance(rel, a.RelationshipPattern):
                continue
            lefts = sorted(bindings.labels_of(left)) or [None]
            rights = sorted(bindings.labels_of(right)) or [None]
            for rel_type in rel.types or [None]:
                for src in lefts:
                    for dst in rights:
                        if rel.direction is a.Direction.INCOMING:
                            triples.append(UsedTriple(dst, rel_type, src, True))
                        else:
                            directed = rel.direction is a.Direction.OUTGOING
                            triples.append(UsedTriple(src, rel_type, dst, directed))
    return list(dict.fromkeys(triples))
