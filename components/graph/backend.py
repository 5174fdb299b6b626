"""The one interface every graph engine implements.

A backend runs *already vetted* read-only Cypher in its engine's own dialect. User- and
model-written queries must go through :class:`components.cypher.query_path.ReadOnlyQueryPath`,
which parses, refuses unsafe or silently-divergent constructs and rewrites Neo4j idioms before
calling :meth:`GraphBackend.run`. Backends never import the compatibility layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from components.graph.schema import GraphSchema

__all__ = ["Dialect", "GraphBackend", "QueryResult"]

Dialect = Literal["ladybug", "neo4j"]


@dataclass(frozen=True)
class QueryResult:
    """Rows as tuples of plain Python values (see :mod:`components.graph.values`).

    ``truncated`` is True when a ``limit`` was given and the engine had at least one more row.
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool = False
    elapsed_ms: float = 0.0

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


@runtime_checkable
class GraphBackend(Protocol):
    """Read-only access to one graph.

    ``run`` executes one read-only, parameterised query. With ``limit``, at most ``limit`` rows
    are returned and one extra row is fetched to set ``truncated``. Errors are raised as
    :class:`components.graph.errors.GraphError` subclasses, never as engine exceptions.
    """

    dialect: Dialect

    def run(
        self,
        query: str,
        params: Mapping[str, Any] | None = None,
        *,
        limit: int | None = None,
        timeout_ms: int | None = None,
    ) -> QueryResult: ...  # timeout_ms: a shorter time limit for this query only

    def schema(self) -> GraphSchema: ...

    def fingerprint(self) -> str: ...

    def fingerprints(self) -> tuple[str, dict[str, str]]: ...  # fingerprint + per label / type, one pass

    def close(self) -> None: ...
