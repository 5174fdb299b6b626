"""Traced query results: the only thing that can be evidence.

A :class:`TracedResult` records one executed read-only query — its text, parameters, the
normalised rows kept (at most ``MAX_ROWS``; one extra row is fetched to set ``truncated``) and a
``result_hash`` over those rows. The hash is order-sensitive only when the query's final clause
orders (``RETURN … ORDER BY``); otherwise rows are compared as a multiset.

The authoritative registry of results lives in the parent process (see
:mod:`components.tools.sandbox`); sandboxed code only ever holds copies.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cypherast import ast as a

from components.cypher.parse import parse_query
from components.graph.values import canonical_json

__all__ = ["MAX_ROWS", "TracedResult", "query_orders", "result_hash"]

MAX_ROWS = 200


def query_orders(query: str) -> bool:
    """True when the query's final clause is a ``RETURN`` with ``ORDER BY`` (a UNION never
    guarantees an order; an ORDER BY inside a WITH does not order the final result)."""
    top = parse_query(query).tree.this
    if not isinstance(top, a.Query) or not top.clauses:
        return False
    last = top.clauses[-1]
    return isinstance(last, a.Return) and last.order is not None


def result_hash(columns: Sequence[str], rows: Sequence[Sequence[Any]], ordered: bool) -> str:
    """>>> result_hash(["x"], [[1], [2]], False) == result_hash(["x"], [[2], [1]], False)
    True
    >>> result_hash(["x"], [[1], [2]], True) == result_hash(["x"], [[2], [1]], True)
    False
    """
    encoded = [canonical_json(list(r)) for r in rows]
    if not ordered:
        encoded.sort()
    h = hashlib.blake2b(digest_size=16)
    h.update(canonical_json(["ordered" if ordered else "multiset", list(columns)]).encode())
    for e in encoded:
        h.update(b"\n" + e.encode())
    return h.hexdigest()


@dataclass(frozen=True)
class TracedResult:
    """``row_count`` is the number of rows *kept* (at most ``MAX_ROWS``); when ``truncated`` is
    set the engine had more, and the full count is unknown."""

    id: str
    query: str
    params: Mapping[str, Any]
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    row_count: int
    truncated: bool
    ordered: bool
    result_hash: str
    episode: str = field(default="", compare=False)

    @classmethod
    def build(
        cls,
        result_id: str,
        query: str,
        params: Mapping[str, Any],
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        truncated: bool,
        episode: str = "",
    ) -> TracedResult:
        ordered = query_orders(query)
        rows_t = tuple(tuple(r) for r in rows)
        return cls(
            id=result_id,
            query=query,
            params=dict(params),
            columns=tuple(columns),
            rows=rows_t,
            row_count=len(rows_t),
            truncated=bool(truncated),
            ordered=ordered,
            result_hash=result_hash(columns, rows_t, ordered),
            episode=episode,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "query": self.query,
            "params": dict(self.params),
            "columns": list(self.columns),
            "rows": [list(r) for r in self.rows],
            "row_count": self.row_count,
            "truncated": self.truncated,
            "ordered": self.ordered,
            "result_hash": self.result_hash,
        }

    def matches(self, claimed: Mapping[str, Any]) -> str | None:
        """Compare a result as claimed by sandboxed code with this registered one; returns
        the first difference (``None`` when identical, hash recomputed from the claimed rows)."""
        if claimed.get("query") != self.query:
            return "query text differs from the executed query"
        if claimed.get("params") != dict(self.params):
            return "parameters differ from the executed query's"
        columns = claimed.get("columns")
        if not isinstance(columns, list) or columns != list(self.columns):
            return "columns differ from the executed result"
        rows = claimed.get("rows")
        # compare encodings, not values: NaN != NaN, but its encoding is stable
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            return "rows were edited"
        try:
            if canonical_json(rows) != canonical_json([list(r) for r in self.rows]):
                return "rows were edited"
        except (TypeError, ValueError):
            return "rows were edited"
        if claimed.get("truncated") != self.truncated:
            return "truncation flag was edited"
        if claimed.get("result_hash") != self.result_hash:
            return "result hash was edited"
        if result_hash(self.columns, rows, self.ordered) != self.result_hash:
            return "result hash does not match the rows"
        return None
