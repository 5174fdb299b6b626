"""What the cells of a query result hold, as ``(column, property)`` pairs.

A result cell is a scalar, a list, or a graph value normalised by
:mod:`components.graph.values` — a node ``{"_label": …, <properties>}``, a relationship
``{"_type": …, <properties>}``, a path ``{"nodes": [...], "relationships": [...]}`` — or a map.
Answer grounding reads a node or relationship cell as its properties and a path as its nodes and
relationships, identically for every backend (both produce these shapes):

* a scalar cell of column ``j`` contributes its value under the pair ``(j, None)``;
* a node / relationship / map cell contributes each property ``p`` under ``(j, p)`` — the
  internal keys (``_label``, ``_type``, anything starting with ``_``) never;
* a list or path cell contributes each of its elements under the same pairs (a list property
  contributes its elements), and marks the pair as coming from a list.

So an answer that is a property of returned nodes is grounded exactly like the same property
returned as a column: through **one** pair used for every row, never by pooling all the
properties of a node.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["Pair", "cell_items", "is_path", "pair_columns", "row_pairs"]

Pair = tuple[int, str | None]


def is_path(value: Any) -> bool:
    return (
        isinstance(value, Mapping) and set(value) == {"nodes", "relationships"} and isinstance(value.get("nodes"), list)
    )


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def cell_items(cell: Any, *, _in_list: bool = False) -> Iterator[tuple[str | None, Any, bool]]:
    """``(property or None, scalar value, came from a list)`` for everything one cell holds.

    >>> sorted(cell_items({"_label": "Movie", "title": "Heat", "released": 1995}), key=str)
    [('released', 1995, False), ('title', 'Heat', False)]
    >>> list(cell_items(["a", "b"]))
    [(None, 'a', True), (None, 'b', True)]
    """
    if cell is None:
        return
    if _scalar(cell):
        yield None, cell, _in_list
    elif is_path(cell):
        for element in list(cell["nodes"]) + list(cell.get("relationships") or []):
            yield from cell_items(element, _in_list=True)
    elif isinstance(cell, Mapping):
        for key, value in cell.items():
            if str(key).startswith("_"):
                continue
            if _scalar(value):
                yield str(key), value, _in_list
            elif isinstance(value, list):
                for v in value:
                    if _scalar(v):
                        yield str(key), v, True
    elif isinstance(cell, (list, tuple)):
        for element in cell:
            yield from cell_items(element, _in_list=True)


def row_pairs(row: Sequence[Any]) -> dict[Pair, list[Any]]:
    """The pairs of one row: ``(column index, property) -> values`` (a list cell gives several)."""
    out: dict[Pair, list[Any]] = {}
    for j, cell in enumerate(row):
        for prop, value, _ in cell_items(cell):
            out.setdefault((j, prop), []).append(value)
    return out


def pair_columns(rows: Sequence[Sequence[Any]]) -> tuple[dict[Pair, list[Any]], set[Pair]]:
    """Every pair over all ``rows``: ``(pair -> values in row order, pairs fed by list cells)``."""
    values: dict[Pair, list[Any]] = {}
    listed: set[Pair] = set()
    for row in rows:
        for j, cell in enumerate(row):
            for prop, value, from_list in cell_items(cell):
                values.setdefault((j, prop), []).append(value)
                if from_list:
                    listed.add((j, prop))
    return values, listed
