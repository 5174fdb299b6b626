"""Graph context shared by both quizzers: start-node sampling, the 1-hop neighbourhood, hops that
follow the schema's directed triples, and the English names of labels and relationships.

Nothing here formats a *value* into Cypher: values are parameters; labels, relationship types and
properties come from the schema and are quoted with :func:`~components.graph.ladybug.quote_identifier`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from components.graph.errors import GraphError
from components.graph.schema import GraphSchema
from components.graph.schema import quote_identifier as q

__all__ = [
    "NAME_PROPERTIES",
    "NUMERIC_TYPES",
    "Hop",
    "StartNode",
    "display_property",
    "hops_from",
    "label_noun",
    "neighbourhood",
    "neighbourhood_text",
    "numeric_properties",
    "plural",
    "rel_phrase",
    "sample_node",
]

#: Human-readable name properties, in order of preference (the primary key is the fallback).
NAME_PROPERTIES: Final = ("name", "title", "symbol", "label", "display_name", "username")
NUMERIC_TYPES: Final = frozenset(
    {
        "INT8",
        "INT16",
        "INT32",
        "INT64",
        "INT128",
        "UINT8",
        "UINT16",
        "UINT32",
        "UINT64",
        "FLOAT",
        "DOUBLE",
        "INTEGER",
        "INT",
    }
)
_MAX_TEXT = 80


def display_property(schema: GraphSchema, label: str) -> str:
    """The property that names a node of ``label`` in questions (``name``, ``title``,
    ``symbol``, …; the primary key only when no such string property exists)."""
    node = schema.labels[label]
    for prop in NAME_PROPERTIES:
        if node.properties.get(prop) == "STRING":
            return prop
    return node.primary_key


def numeric_properties(schema: GraphSchema, label: str) -> list[str]:
    """Numeric properties of ``label`` (never the primary key), in schema order."""
    node = schema.labels[label]
    return [p for p, t in node.properties.items() if t.upper() in NUMERIC_TYPES and p != node.primary_key]


def label_noun(label: str) -> str:
    """``"Author"`` -> ``"author"``, ``"GeneVariant"`` -> ``"gene variant"``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", label).replace("_", " ").lower()


def plural(noun: str) -> str:
    """Naive English plural: ``paper``->``papers``, ``disease``->``diseases``, ``gene``->``genes``."""
    if re.search(r"(s|x|z|ch|sh)$", noun):
        return noun + "es"
    if re.search(r"[^aeiou]y$", noun):
        return noun[:-1] + "ies"
    return noun + "s"


_PREPOSITIONS: Final = frozenset({"by", "in", "at", "on", "to", "of", "from", "for", "into", "under"})
_IRREGULAR_PARTICIPLES: Final = frozenset({"made", "written", "built", "held", "sold", "known", "found", "born"})


def rel_phrase(rel_type: str) -> tuple[str, bool]:
    """``("published in", True)``: the relationship type as words, and whether it reads as a
    participle (``X published in Y``, ``X made by Y``) rather than a verb (``X wrote Y``)."""
    words = rel_type.lower().replace("-", "_").split("_")
    first = words[0]
    participle = (
        len(words) > 1 and words[-1] in _PREPOSITIONS and (first.endswith("ed") or first in _IRREGULAR_PARTICIPLES)
    )
    return " ".join(w for w in words if w), participle


def _verb_for_plural(phrase: str) -> str:
    """``cites`` -> ``cite`` (a plural subject); past tenses and participles unchanged."""
    first, _, rest = phrase.partition(" ")
    if first.endswith("s") and not first.endswith("ss") and len(first) > 3:
        first = first[:-1]
    return f"{first} {rest}".strip()


@dataclass(frozen=True)
class Hop:
    """One step along a schema triple, seen from the node we stand on: ``forward`` when that node
    is the triple's source (``(here)-[:T]->(there)``), else backward (``(here)<-[:T]-(there)``)."""

    source: str
    type: str
    target: str
    forward: bool

    @property
    def here(self) -> str:
        return self.source if self.forward else self.target

    @property
    def there(self) -> str:
        return self.target if self.forward else self.source

    def pattern(
        self,
        here_var: str,
        there_var: str,
        *,
        here_label: bool = False,
        there_label: bool = True,
        here_props: str = "",
        there_props: str = "",
    ) -> str:
        """Cypher text for the step, direction as in the schema triple."""
        h = f"({here_var}{':' + q(self.here) if here_label else ''}{here_props})"
        t = f"({there_var}{':' + q(self.there) if there_label else ''}{there_props})"
        rel = f"[:{q(self.type)}]"
        return f"{h}-{rel}->{t}" if self.forward else f"{h}<-{rel}-{t}"

    def describe(self, anchor: str, *, anchor_plural: bool = False) -> str:
        """English for the nodes at the far end, relative to ``anchor``.

        Forward ``WROTE`` from ``the author "X"`` -> ``papers that the author "X" wrote``;
        backward -> ``authors that wrote the paper "X"``; participles read
        ``venues that the paper "X" is published in`` / ``papers published in the venue "X"``.
        """
        phrase, participle = rel_phrase(self.type)
        there = plural(label_noun(self.there))
        if self.forward:
            if participle:
                return f"{there} that {anchor} {'are' if anchor_plural else 'is'} {phrase}"
            verb = _verb_for_plural(phrase) if anchor_plural else phrase
            return f"{there} that {anchor} {verb}"
        if participle:
            return f"{there} {phrase} {anchor}"
        return f"{there} that {_verb_for_plural(phrase)} {anchor}"

    def describe_single(self, anchor: str) -> str:
        """Like :meth:`describe` with a singular far end: ``the venue that the paper "X" is
        published in``."""
        phrase, participle = rel_phrase(self.type)
        there = label_noun(self.there)
        if self.forward:
            return f"the {there} that {anchor} {'is ' if participle else ''}{phrase}"
        return f"the {there} {phrase} {anchor}" if participle else f"the {there} that {phrase} {anchor}"


def hops_from(schema: GraphSchema, label: str) -> list[Hop]:
    """Every hop a node of ``label`` can take, following the schema's directed triples (a
    self-triple such as ``(Paper)-[:CITES]->(Paper)`` gives both directions)."""
    hops = []
    for s, t, d in sorted(schema.triples()):
        if s == label:
            hops.append(Hop(s, t, d, True))
        if d == label:
            hops.append(Hop(s, t, d, False))
    return hops


@dataclass(frozen=True)
class StartNode:
    label: str
    id: Any
    name: str

    def mention(self) -> str:
        """``the author "Wei Zhang"``."""
        return f'the {label_noun(self.label)} "{self.name}"'

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "id": self.id, "name": self.name}


def _label_count(query_path: Any, schema: GraphSchema, label: str) -> int:
    count = schema.labels[label].count
    if count:
        return int(count)
    res = query_path.run(f"MATCH (n:{q(label)}) RETURN count(n) AS c")
    return int(res.rows[0][0]) if res.rows else 0


def sample_node(
    query_path: Any, schema: GraphSchema, rng: np.random.Generator, labels: list[str] | None = None
) -> StartNode | None:
    """A uniformly drawn label (among ``labels`` or those taking part in a triple), then a
    uniformly drawn node of it (``ORDER BY`` primary key ``SKIP $k``): deterministic per rng
    state and graph. ``None`` when the graph has no such node."""
    pool = labels if labels is not None else sorted({x for s, _, d in schema.triples() for x in (s, d)})
    pool = [lab for lab in pool if lab in schema.labels]
    if not pool:
        return None
    label = pool[int(rng.integers(len(pool)))]
    try:
        count = _label_count(query_path, schema, label)
        if count <= 0:
            return None
        pk, name = schema.labels[label].primary_key, display_property(schema, label)
        res = query_path.run(
            f"MATCH (n:{q(label)}) RETURN n.{q(pk)} AS id, n.{q(name)} AS name ORDER BY id SKIP $k LIMIT 1",
            {"k": int(rng.integers(count))},
        )
    except GraphError:
        return None
    if not res.rows:
        return None
    node_id, node_name = res.rows[0]
    return StartNode(label, node_id, str(node_name if node_name is not None else node_id))


def _short(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _MAX_TEXT:
        return value[: _MAX_TEXT - 1] + "…"
    if isinstance(value, list):
        return [_short(v) for v in value[:5]]
    return value


def neighbourhood(query_path: Any, schema: GraphSchema, node: StartNode, *, sample: int = 5) -> dict[str, Any]:
    """The node's properties and, per hop of its label, the neighbour count and a few
    neighbours (primary key and name, in primary-key order). Plain JSON data."""
    label = schema.labels[node.label]
    pk = label.primary_key
    out: dict[str, Any] = {"node": node.to_dict(), "properties": {}, "hops": []}
    props = ", ".join(f"n.{q(p)} AS {q(p)}" for p in label.properties)
    try:
        res = query_path.run(f"MATCH (n:{q(node.label)} {{{q(pk)}: $id}}) RETURN {props}", {"id": node.id}, limit=1)
        if res.rows:
            out["properties"] = {c: _short(v) for c, v in zip(res.columns, res.rows[0]) if v is not None}
    except GraphError:
        pass
    for hop in hops_from(schema, node.label):
        there = schema.labels[hop.there]
        tname = display_property(schema, hop.there)
        pattern = hop.pattern("n", "m", here_props=f" {{{q(pk)}: $id}}", here_label=True)
        try:
            cnt = query_path.run(f"MATCH {pattern} RETURN count(DISTINCT m) AS c", {"id": node.id}).rows[0][0]
            rows = (
                query_path.run(
                    f"MATCH {pattern} RETURN DISTINCT m.{q(there.primary_key)} AS id, m.{q(tname)} AS name ORDER BY id",
                    {"id": node.id},
                    limit=sample,
                ).rows
                if cnt
                else ()
            )
        except GraphError:
            continue
        out["hops"].append(
            {
                "type": hop.type,
                "direction": "out" if hop.forward else "in",
                "label": hop.there,
                "count": int(cnt),
                "sample": [{"id": i, "name": _short(n)} for i, n in rows],
            }
        )
    return out


def neighbourhood_text(nb: dict[str, Any]) -> str:
    """Prompt rendering of :func:`neighbourhood`::

    (:Author {id: "author_3", name: "Wei Zhang", h_index: 12})
      -[:WROTE]->(:Paper) x3: "Paper A" (paper_7), …
    """
    node = nb.get("node", {})
    props = ", ".join(f"{k}: {v!r}" for k, v in nb.get("properties", {}).items())
    lines = [f"(:{node.get('label')} {{{props}}})"]
    for h in nb.get("hops", []):
        arrow = f"-[:{h['type']}]->" if h["direction"] == "out" else f"<-[:{h['type']}]-"
        names = ", ".join(f'"{s["name"]}" ({s["id"]})' for s in h["sample"])
        more = ", …" if h["count"] > len(h["sample"]) else ""
        lines.append(f"  {arrow}(:{h['label']}) x{h['count']}" + (f": {names}{more}" if names else ""))
    return "\n".join(lines)
