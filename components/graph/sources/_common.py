"""Helpers shared by the importers: identifier sanitising, value normalisation, final checks.

Private to :mod:`components.graph.sources`; importers use these instead of re-implementing them.

Rules every importer applies (each importer's docstring repeats the ones its users meet):

* A label, relationship type or property name that starts with ``_`` (after Unicode folding
  and ignoring surrounding whitespace) is refused, never sanitised away: ``_``-prefixed keys are
  reserved for internal keys (``components.graph.values`` drops them from query results).
* Labels and relationship types share one case-insensitive namespace, and so do the properties
  of one label or type (:class:`~components.graph.model.CatalogNames`).
* Integers must fit INT64 (-2**63 .. 2**63-1) and floats must be finite: nothing is silently
  widened, rounded or turned into ``inf``. Strings must be valid Unicode (no lone surrogates).
* A source that yields no nodes at all is an error (``... is empty``).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from components.graph.errors import ImportFormatError
from components.graph.model import RESERVED_PREFIX_REASON, CatalogNames, GraphData, validate_identifier

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "CatalogNames",
    "IdIndex",
    "check_graph",
    "describe",
    "reserved_name",
    "value_problem",
    "normalize_value",
    "sanitize_identifier",
    "to_label",
    "to_rel_type",
    "unique_names",
]

_WORD = re.compile(r"[A-Za-z0-9]+")
_VALID = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_SURROGATE = re.compile("[\ud800-\udfff]")

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def reserved_name(name: object) -> bool:
    """True for a name starting with ``_`` once folded and stripped (``_id``, `` _x``, ``＿x``)."""
    return isinstance(name, str) and unicodedata.normalize("NFKD", name).strip().startswith("_")


def _check_reserved(name: object, what: str, path: str | None) -> None:
    if reserved_name(name):
        raise ImportFormatError(f"invalid {what} {describe(name)}: {RESERVED_PREFIX_REASON}", path=path)


def describe(value: Any, limit: int = 60) -> str:
    """A short, safe ``repr`` for error messages (long values cut, containers named)."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 5] + "…" + text[-4:]


def value_problem(value: Any) -> str | None:
    """Why a scalar (or each item of a list) cannot be stored as it is; ``None`` when it can.

    >>> value_problem(2**63)
    'integer 9223372036854775808 does not fit INT64 (-2**63 .. 2**63-1)'
    >>> value_problem([1.5, float("inf")]), value_problem("ok")
    ('number inf is not finite (out of range for a double)', None)
    """
    for item in value if isinstance(value, (list, tuple)) else (value,):
        if isinstance(item, bool):
            continue
        if isinstance(item, int) and not INT64_MIN <= item <= INT64_MAX:
            return f"integer {describe(item)} does not fit INT64 (-2**63 .. 2**63-1)"
        if isinstance(item, float) and not math.isfinite(item):
            return f"number {item!r} is not finite (out of range for a double)"
        if isinstance(item, str) and _SURROGATE.search(item):
            return f"string {describe(item)} holds a lone surrogate (not valid Unicode)"
    return None


def _ascii_words(name: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    return _WORD.findall(folded)


def _require_words(name: str, what: str, path: str | None) -> list[str]:
    _check_reserved(name, what, path)
    words = _ascii_words(name)
    if not words:
        raise ImportFormatError(f"cannot turn {describe(name)} into a {what} name", path=path)
    return words


def sanitize_identifier(name: str, what: str = "identifier", path: str | None = None) -> str:
    """Return ``name`` unchanged when it is already a valid identifier, else a deterministic
    ASCII version: accents folded, runs of other characters become ``_``, a leading digit gets
    a ``n`` prefix.

    >>> sanitize_identifier("Movie"), sanitize_identifier("first name"), sanitize_identifier("2nd")
    ('Movie', 'first_name', 'n2nd')

    A name starting with ``_`` is refused (see the module docstring), not sanitised to ``id``.
    """
    _check_reserved(name, what, path)
    if isinstance(name, str) and _VALID.match(name):
        return name
    out = "_".join(_require_words(str(name), what, path))
    if out[0].isdigit():
        out = "n" + out
    return validate_identifier(out, what)


def to_label(name: str, path: str | None = None) -> str:
    """``paper`` -> ``Paper``, ``Biological_Process`` / ``Side Effect`` -> ``BiologicalProcess``
    / ``SideEffect`` (each word's first letter upper-cased, the rest kept)."""
    out = "".join(w[0].upper() + w[1:] for w in _require_words(name, "label", path))
    if out[0].isdigit():
        out = "N" + out
    return validate_identifier(out, "label")


def to_rel_type(name: str, path: str | None = None) -> str:
    """``also_viewed`` / ``binds`` / ``cited by`` -> ``ALSO_VIEWED`` / ``BINDS`` / ``CITED_BY``."""
    out = "_".join(w.upper() for w in _require_words(name, "relationship type", path))
    if out[0].isdigit():
        out = "R" + out
    return validate_identifier(out, "relationship type")


_SCALARS = (str, bool, int, float)


def normalize_value(value: Any) -> Any:
    """Keep ``None``, scalars and homogeneous lists of scalars; JSON-encode anything else.

    A list is homogeneous when its items are all strings, all booleans or all numbers
    (ints and floats mix: they become floats).

    >>> normalize_value([1, 2.5]), normalize_value({"a": 1}), normalize_value([1, "x"])
    ([1.0, 2.5], '{"a": 1}', '[1, "x"]')
    """
    if value is None or isinstance(value, _SCALARS):
        return value
    if isinstance(value, (list, tuple)):
        kinds = {_kind(v) for v in value}
        if not value or kinds in ({"str"}, {"bool"}, {"int"}, {"float"}):
            return list(value)
        if kinds == {"int", "float"}:
            return [float(v) for v in value]
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float, str)):
        return type(value).__name__
    return "other"


class IdIndex:
    """Which label(s) hold a node id — used to resolve relationship endpoints by id alone."""

    def __init__(self) -> None:
        self._labels: dict[str, list[str]] = {}

    def add(self, node_id: str, label: str) -> None:
        labels = self._labels.setdefault(node_id, [])
        if label not in labels:
            labels.append(label)

    def labels_of(self, node_id: str) -> list[str]:
        return self._labels.get(node_id, [])

    def has(self, label: str, node_id: str) -> bool:
        return label in self._labels.get(node_id, ())


def check_graph(
    graph: GraphData, path: str | Path | None = None, empty: str = "the source is empty: it holds no nodes"
) -> GraphData:
    """Check the graph has nodes, ids are unique within each label, every relationship endpoint
    exists and names follow the engine's catalog rules, then infer property types.
    Returns ``graph``."""
    where = None if path is None else str(path)
    if graph.node_count == 0:
        raise ImportFormatError(empty, path=where)
    CatalogNames.check(graph, where)
    ids: dict[str, set[str]] = {}
    for label, ns in graph.nodes.items():
        seen = ids[label] = set()
        for row in ns.rows:
            if row["id"] in seen:
                raise ImportFormatError(f"duplicate {label} id {row['id']!r}", path=where)
            seen.add(row["id"])
    for rtype, rs in graph.rels.items():
        for rel in rs.rows:
            for label, node_id in ((rel.src_label, rel.src_id), (rel.dst_label, rel.dst_id)):
                if node_id not in ids.get(label, ()):
                    raise ImportFormatError(
                        f"relationship {rtype} refers to unknown node {label}:{node_id!r}",
                        path=where,
                    )
    return graph.infer_types()


def unique_names(names: Iterable[str], fmt: str = "{} ({})") -> list[str]:
    """Make names unique in order of appearance: the k-th repeat (k >= 2) becomes
    ``fmt.format(name, k)``.

    >>> unique_names(["a", "b", "a"])
    ['a', 'b', 'a (2)']
    """
    seen: dict[str, int] = {}
    taken = set()
    out: list[str] = []
    for name in names:
        k = seen.get(name, 0)
        candidate = name
        while candidate in taken:
            k += 1
            candidate = fmt.format(name, k) if k >= 2 else name
        seen[name] = k
        taken.add(candidate)
        out.append(candidate)
    return out
