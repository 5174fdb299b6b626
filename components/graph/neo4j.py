"""Neo4j backend (official driver): READ-routed transactions, parameters, timeouts.

Queries run in managed read transactions (``session.execute_read``), so a cluster routes them
to readers and the server refuses writes underneath the static refusal of the query path.
Nodes are identified by a key property (``id_property``, default ``id``), the same key the
Ladybug importer makes primary, so fingerprints agree across engines.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import neo4j
from neo4j import exceptions as nx

from components.graph.backend import QueryResult
from components.graph.errors import (
    AuthenticationError,
    DatabaseUnavailableError,
    GraphError,
    QueryExecutionError,
    QuerySyntaxError,
    QueryTimeoutError,
    SchemaError,
    UnsafeQueryError,
)
from components.graph.fingerprint import graph_fingerprints, node_digest, rel_digest
from components.graph.schema import GraphSchema, NodeLabel, RelType, Triple
from components.graph.values import node_dict, normalize, path_dict, rel_dict

__all__ = ["Neo4jBackend", "NEO4J_TYPES"]

NEO4J_TYPES = {
    "String": "STRING",
    "Long": "INT64",
    "Integer": "INT64",
    "Double": "DOUBLE",
    "Float": "DOUBLE",
    "Boolean": "BOOLEAN",
    "Date": "DATE",
    "DateTime": "TIMESTAMP",
    "LocalDateTime": "TIMESTAMP",
    "StringArray": "STRING[]",
    "LongArray": "INT64[]",
    "DoubleArray": "DOUBLE[]",
}


def _label(node: neo4j.graph.Node) -> str:
    labels = sorted(node.labels)
    return labels[0] if labels else ""


def _convert(value: Any) -> Any:
    if isinstance(value, neo4j.graph.Node):
        return node_dict(_label(value), dict(value))
    if isinstance(value, neo4j.graph.Relationship):
        return rel_dict(value.type, dict(value))
    if isinstance(value, neo4j.graph.Path):
        return path_dict([_convert(n) for n in value.nodes], [_convert(r) for r in value.relationships])
    if isinstance(value, (list, tuple)):
        return [_convert(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _convert(v) for k, v in value.items()}
    return normalize(value)


def _wrap_error(exc: Exception) -> GraphError:
    msg = getattr(exc, "message", None) or str(exc)
    first = (msg or type(exc).__name__).strip().splitlines()[0]
    code = getattr(exc, "code", "") or ""
    if isinstance(exc, (nx.AuthError, nx.AuthConfigurationError)):
        return AuthenticationError(f"Neo4j rejected the credentials: {first}")
    if isinstance(exc, (nx.ServiceUnavailable, nx.SessionExpired, nx.DatabaseUnavailable)):
        return DatabaseUnavailableError(f"Neo4j is unavailable: {first}")
    if isinstance(exc, nx.CypherSyntaxError):
        return QuerySyntaxError(first)
    if "TransactionTimedOut" in code or "Timeout" in code:
        return QueryTimeoutError(f"query exceeded its time limit: {first}")
    if isinstance(exc, (nx.Forbidden, nx.ForbiddenOnReadOnlyDatabase)) or "AccessMode" in code:
        return UnsafeQueryError(f"refused by the read-only transaction: {first}")
    if "UnknownLabel" in code or "UnknownRelationshipType" in code or "UnknownProperty" in code:
        return SchemaError(first)
    return QueryExecutionError(first)


class Neo4jBackend:
    """Read-only access to a Neo4j database through the official driver."""

    dialect = "neo4j"

    def __init__(
        self,
        uri: str,
        user: str = "neo4j",
        password: str = "",
        *,
        database: str | None = None,
        timeout_ms: int = 30_000,
        id_property: str = "id",
        connection_timeout_s: float = 10.0,
    ) -> None:
        self.uri = uri
        self.database = database
        self.timeout_s = timeout_ms / 1000.0
        self.id_property = id_property
        self._schema: GraphSchema | None = None
        try:
            self._driver = neo4j.GraphDatabase.driver(
                uri, auth=(user, password), connection_timeout=connection_timeout_s
            )
            self._driver.verify_connectivity()
        except GraphError:
            raise
        except Exception as exc:
            raise _wrap_error(exc) from exc

    def _read(self, work: Any, timeout_s: float | None = None) -> Any:
        """Run ``work(tx)`` in a managed READ transaction with the configured timeout (or a
        shorter one)."""
        unit = neo4j.unit_of_work(timeout=min(self.timeout_s, timeout_s) if timeout_s else self.timeout_s)(work)
        try:
            with self._driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS) as session:
                return session.execute_read(unit)
        except GraphError:
            raise
        except Exception as exc:
            raise _wrap_error(exc) from exc

    def run(
        self,
        query: str,
        params: Mapping[str, Any] | None = None,
        *,
        limit: int | None = None,
        timeout_ms: int | None = None,
    ) -> QueryResult:
        if limit is not None and limit < 0:
            raise ValueError("limit must be >= 0")
        start = time.perf_counter()

        def work(tx: neo4j.ManagedTransaction) -> tuple[tuple[str, ...], list, bool]:
            result = tx.run(query, dict(params or {}))
            columns = tuple(result.keys())
            rows: list[tuple[Any, ...]] = []
            truncated = False
            for record in result:
                if limit is not None and len(rows) >= limit:
                    truncated = True
                    break
                rows.append(tuple(_convert(v) for v in record.values()))
            result.consume()
            return columns, rows, truncated

        columns, rows, truncated = self._read(work, None if timeout_ms is None else timeout_ms / 1000)
        return QueryResult(columns, tuple(rows), truncated, (time.perf_counter() - start) * 1e3)

    def _all(self, query: str, params: Mapping[str, Any] | None = None) -> list[list[Any]]:
        return self._read(lambda tx: [list(r.values()) for r in tx.run(query, dict(params or {}))])

    def schema(self) -> GraphSchema:
        if self._schema is None:
            self._schema = self._read_schema()
        return self._schema

    def _read_schema(self) -> GraphSchema:
        props: dict[str, dict[str, str]] = {}
        for labels, name, types in self._all(
            "CALL db.schema.nodeTypeProperties() YIELD nodeLabels, propertyName, propertyTypes "
            "RETURN nodeLabels, propertyName, propertyTypes"
        ):
            for label in labels or []:
                entry = props.setdefault(label, {})
                if name:
                    entry[name] = NEO4J_TYPES.get((types or ["String"])[0], "STRING")
        rel_props: dict[str, dict[str, str]] = {}
        for rel_type, name, types in self._all(
            "CALL db.schema.relTypeProperties() YIELD relType, propertyName, propertyTypes "
            "RETURN relType, propertyName, propertyTypes"
        ):
            entry = rel_props.setdefault(rel_type.strip(":`"), {})
            if name:
                entry[name] = NEO4J_TYPES.get((types or ["String"])[0], "STRING")
        counts = dict((label, int(c)) for label, c in self._all("MATCH (n) UNWIND labels(n) AS l RETURN l, count(*)"))
        triples: dict[str, list[Triple]] = {}
        for s, t, d, c in self._all("MATCH (a)-[r]->(b) RETURN head(labels(a)), type(r), head(labels(b)), count(*)"):
            triples.setdefault(t, []).append(Triple(s, t, d, int(c)))
        labels = []
        for label, p in props.items():
            ordered = {self.id_property: p.get(self.id_property, "STRING")}
            ordered.update({k: v for k, v in sorted(p.items()) if k != self.id_property})
            labels.append(NodeLabel(label, ordered, self.id_property, counts.get(label, 0)))
        rels = [RelType(t, tuple(ts), rel_props.get(t, {}), sum(x.count for x in ts)) for t, ts in triples.items()]
        return GraphSchema.build(labels, rels)

    def _stream(self, query: str, params: Mapping[str, Any]) -> Iterator[list[Any]]:
        with self._driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS) as session:
            try:
                for record in session.run(query, dict(params)):
                    yield list(record.values())
            except Exception as exc:
                raise _wrap_error(exc) from exc

    def _digests(self) -> tuple[Iterator[tuple[str, int]], Iterator[tuple[str, int]]]:
        """``(label, node digest)`` and ``(type, rel digest)`` streams over the whole graph."""
        pk = {"pk": self.id_property}
        nodes = (
            (label, node_digest(label, p))
            for label, p in self._stream("MATCH (n) RETURN head(labels(n)), properties(n)", pk)
        )
        rels = (
            (t, rel_digest(t, s, sk, d, dk, p))
            for t, s, sk, d, dk, p in self._stream(
                "MATCH (a)-[r]->(b) RETURN type(r), head(labels(a)), a[$pk], head(labels(b)), b[$pk], properties(r)", pk
            )
        )
        return nodes, rels

    def fingerprint(self) -> str:
        return graph_fingerprints(*self._digests())[0]  # no schema query: the sensor calls this each tick

    def fingerprints(self) -> tuple[str, dict[str, str]]:
        """The fingerprint and the per label / relationship type ones, in one pass
        (:func:`graph_fingerprints`)."""
        return graph_fingerprints(*self._digests(), self.schema())

    def close(self) -> None:
        self._driver.close()

    def __enter__(self) -> Neo4jBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
