"""Template families: what a question's family is in the report, and whether an externally
written question lies outside everything the template quizzer produces.

* :func:`family_label` — the report's *template family* of a question: ``"<match family> ×
  <return family>"`` of the template that wrote a test-split question (the certified item's
  realised axes), ``"external"`` for a question of the domain's external file.
* :func:`outside_templates` — decided by the **feature deriver** on a gold query
  (:func:`components.cypher.features.derive`), never by reading the question: a query is outside
  the template families when its derived ``(match family, return family)`` is one no template
  produces (neither a template's own label, :func:`~components.quizzer.template.template_table`,
  nor what a template query derives to; ``property`` and ``distinct_set`` count as one return
  family, since they differ only by ``DISTINCT``), when it uses an operation (``ops``) no template
  query uses, an aggregate function no template query calls, a **range filter** — a property
  compared with a constant by ``< > <= >=`` (templates compare two entities' values or a count
  with 0, never a property with a constant) — or a **property filter**: a node constrained by
  equality on a property that does not name it (templates anchor nodes by their key only; a
  user names an entity by its key or display property — ``name``, ``title``, the schema's
  display property — and anything else, ``year = 2019``, ``kind = 'journal'``, is a filter).
  The template side is :data:`TEMPLATE_DERIVED` — measured by
  deriving every evidence query of the template quizzer on the three demo graphs (the test
  ``tests/components/evaluation/test_families.py`` re-derives them and fails if a template ever
  produces something outside these sets, so they cannot drift silently).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

from components.cypher.features import AGGREGATES, derive

__all__ = [
    "EXTERNAL",
    "TEMPLATE_DERIVED",
    "family_label",
    "outside_report",
    "outside_templates",
    "template_signature",
]

EXTERNAL: Final = "external"

#: what template queries derive to (module docstring): families, operations, aggregate functions
TEMPLATE_DERIVED: Final = {
    "families": frozenset(
        {
            ("comparison", "aggregation"),
            ("comparison", "boolean"),
            ("comparison", "property"),
            ("intersection", "aggregation"),
            ("intersection", "distinct_set"),
            ("intersection", "ranking"),
            ("multi_hop", "aggregation"),
            ("multi_hop", "distinct_set"),
            ("multi_hop", "ranking"),
            ("one_hop", "aggregation"),
            ("one_hop", "distinct_set"),
            ("one_hop", "ranking"),
            ("optional_match", "aggregation"),
            ("optional_match", "boolean"),
            ("optional_match", "property"),
            ("shortest_path", "boolean"),
            ("shortest_path", "property"),
        }
    ),
    "ops": frozenset(
        {
            "aggregation",
            "arithmetic",
            "case",
            "comparison",
            "count",
            "distinct",
            "exists",
            "filter",
            "limit",
            "list_op",
            "negation",
            "null_check",
            "optional",
            "order",
            "shortest_path",
            "var_length",
        }
    ),
    "aggregates": frozenset({"avg", "collect", "count", "max", "min"}),
}

_AGG_CALL: Final = re.compile(r"\b(" + "|".join(sorted(AGGREGATES)) + r")\s*\(", re.I)
_PROP: Final = r"\w+\.`?\w+`?"
_CONST: Final = r"(?:\$\w+|[-+]?\d[\d.]*|date\s*\()"
_RANGE: Final = re.compile(rf"{_PROP}\s*(?:<=|>=|<|>)\s*{_CONST}|{_CONST}\s*(?:<=|>=|<|>)\s*{_PROP}", re.I)
_SETS: Final = ("property", "distinct_set")


def _template_families() -> frozenset[tuple[str, str]]:
    from components.quizzer.template import template_table

    return TEMPLATE_DERIVED["families"] | frozenset(template_table())


def _family_inside(family: tuple[str, str], inside: frozenset[tuple[str, str]]) -> bool:
    match, ret = family
    if ret in _SETS:
        return any((match, r) in inside for r in _SETS)
    return family in inside


def _json(value: Any, default: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return default
    return default if value is None else value


def family_label(row: Mapping[str, Any]) -> str:
    """A question's template family for the report's breakdown (module docstring): a row of
    the external file → ``external``; a certified row → its template's ``match × return``
    (``meta_json.realized_axes``, else the requested axes)."""
    if row.get("section") == EXTERNAL:
        return EXTERNAL
    meta = _json(row.get("meta_json"), {}) or {}
    axes = meta.get("realized_axes") or _json(row.get("axes_json"), {}) or {}
    match, ret = axes.get("match_family"), axes.get("return_family")
    return f"{match} × {ret}" if match and ret else "unknown"


def template_signature(query: str, schema: Any = None) -> dict[str, Any] | None:
    """What :func:`outside_templates` compares: the derived families, ``ops`` and the aggregate
    functions a query calls; ``None`` when the query does not derive."""
    d = derive(query, schema)
    if not d.ok:
        return None
    return {
        "family": (d.match_family, d.return_family),
        "ops": frozenset(d.ops),
        "aggregates": frozenset(m.lower() for m in _AGG_CALL.findall(query)),
        "range_filter": bool(_RANGE.search(query.replace("`", ""))),
        "filtered": frozenset((n.label, n.property) for n in d.nodes if n.property),
    }


def outside_templates(query: str, schema: Any = None) -> list[str]:
    """Why a gold query is outside the template families (empty: inside; module docstring).

    >>> outside_templates("MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN count(p)")
    []
    >>> outside_templates("MATCH (p:Paper) WHERE p.year >= 2015 RETURN sum(p.citations)")
    ['aggregate sum', 'range filter']
    """
    sig = template_signature(query, schema)
    if sig is None:
        return ["does not derive"]
    why = []
    if not _family_inside(sig["family"], _template_families()):
        why.append("family " + " × ".join(sig["family"]))
    why += [f"op {o}" for o in sorted(sig["ops"] - TEMPLATE_DERIVED["ops"])]
    why += [f"aggregate {a}" for a in sorted(sig["aggregates"] - TEMPLATE_DERIVED["aggregates"])]
    if sig["range_filter"]:
        why.append("range filter")
    if any(prop not in _naming(label, schema) for label, prop in sig["filtered"]):
        why.append("property filter")
    return why


def _naming(label: str, schema: Any) -> set[str]:
    """The properties that name a node of ``label``: its key and display property (``name`` /
    ``title`` / ``id`` without a schema)."""
    names = {"id", "name", "title"}
    if schema is not None and label in getattr(schema, "labels", {}):
        from components.quizzer.context import display_property

        names |= {schema.labels[label].primary_key, display_property(schema, label)}
    return names


def outside_report(rows: Sequence[Mapping[str, Any]], schema: Any = None) -> dict[str, Any]:
    """Per question file: how many gold queries lie outside the template families, the share, and
    the reasons counted (a query may have several)."""
    reasons: Counter[str] = Counter()
    outside = 0
    with_query = [r for r in rows if r.get("cypher")]
    for r in with_query:
        why = outside_templates(str(r["cypher"]), schema)
        if why:
            outside += 1
            reasons.update(why)
    n = len(with_query)
    return {"questions": n, "outside": outside, "share": outside / n if n else None, "reasons": dict(reasons)}
