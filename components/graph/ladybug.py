"""Embedded backend: LadybugDB (the maintained Kùzu fork), opened **read-only**.

Every query path opens the database with ``read_only=True``: the engine itself refuses writes,
underneath the static refusal in :mod:`components.cypher.safety`. Note that read-only mode still
reads local files through ``LOAD FROM`` — that is refused statically by the query path, never
here. Writing (import) happens only in :mod:`components.graph.load`.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import ladybug

from components.graph.backend import QueryResult
from components.graph.errors import (
    DatabaseUnavailableError,
    GraphError,
    QueryExecutionError,
    QuerySyntaxError,
    QueryTimeoutError,
    SchemaError,
    UnsafeQueryError,
)
from components.graph.fingerprint import graph_fingerprints, node_digest, rel_digest
from components.graph.manifest import verify_database
from components.graph.schema import GraphSchema, NodeLabel, RelType, Triple, quote_identifier
from components.graph.values import node_dict, normalize, path_dict, rel_dict

__all__ = ["DB_FILENAME", "LadybugBackend", "db_file", "power_of_two_at_least", "quote_identifier"]

DB_FILENAME = "graph.lbug"


def db_file(path: str | Path) -> Path:
    """A database folder holds ``graph.lbug``; a path to the file itself is accepted too."""
    p = Path(path)
    return p / DB_FILENAME if p.is_dir() or p.suffix != ".lbug" else p


_POSITION = re.compile(r"\(line: (\d+), offset: (\d+)\)")
DEFAULT_TIMEOUT_MS = 30_000
_TYPE_NAMES = {"BOOL": "BOOLEAN"}  # catalog spelling -> the schema's (Neo4j-neutral) names
# Ladybug 0.22 segfaults (instead of erroring) on ordinary read queries once its buffer pool is
# under pressure: a replay of the template quizzer's ~2700 queries on the 50k-node academic
# graph crashed 5 runs out of 5 at 256 MB, at a random query each time, and never at 512 MB or
# 2 GB. The pool is reserved, not resident: RSS grows only with the pages a query touches.
DEFAULT_BUFFER_POOL_MB = 1024
# Ladybug reserves address space for the whole database up front (``max_db_size``, default 8 TiB)
# on top of the buffer pool, so an open fails under an address-space limit (``ulimit -v 4000000``:
# "Mmap for size 8796093022208 failed"). A read-only database never grows (queries' temporary
# pages live in the buffer pool's own region): reserve the power of two >= max(256 MiB, 2 x the
# file) — 1.25 GiB in all for a small graph with the default pool. (Measured: a 22 MB database
# answers the fingerprint and whole-graph aggregations with max_db_size = 32 MiB.)
MIN_MAX_DB_SIZE = 256 << 20


def power_of_two_at_least(n: int) -> int:
    """The engine wants ``max_db_size`` to be a power of two.

    >>> power_of_two_at_least(1), power_of_two_at_least(1 << 30), power_of_two_at_least((1 << 30) + 1)
    (1, 1073741824, 2147483648)
    """
    return 1 << max(int(n) - 1, 0).bit_length()


def _convert(value: Any) -> Any:
    """Ladybug's Python values -> normalised values (nodes, rels and paths included)."""
    if isinstance(value, dict):
        if "_NODES" in value and "_RELS" in value:
            return path_dict([_convert(n) for n in value["_NODES"]], [_convert(r) for r in value["_RELS"]])
        if "_LABEL" in value and "_SRC" in value:
            return rel_dict(value["_LABEL"], value)
        if "_LABEL" in value and "_ID" in value:
            return node_dict(value["_LABEL"], value)
        return {str(k): _convert(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_convert(v) for v in value]
    return normalize(value)


def _wrap_error(exc: Exception, query: str) -> GraphError:
    msg = str(exc).strip()
    first = msg.splitlines()[0] if msg else type(exc).__name__
    if msg.startswith("Parser exception"):
        m = _POSITION.search(msg)
        line, col = (int(m.group(1)), int(m.group(2)) + 1) if m else (None, None)
        return QuerySyntaxError(first.split(" (line:")[0], line, col)
    if "Interrupted" in msg or "timeout" in msg.lower():
        return QueryTimeoutError(f"query exceeded its time limit: {first}")
    if "read-only" in msg or "READ ONLY" in msg:
        return UnsafeQueryError(f"refused by the read-only database: {first}")
    if msg.startswith("Binder exception") and ("does not exist" in msg or "Cannot find property" in msg):
        return SchemaError(first)
    return QueryExecutionError(first)


class LadybugBackend:
    """Read-only access to a Ladybug database folder.

    >>> LadybugBackend("/nonexistent/db")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    components.graph.errors.DatabaseUnavailableError: no Ladybug database at /nonexistent/db
    """

    dialect = "ladybug"

    def __init__(
        self,
        path: str | Path,
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        buffer_pool_mb: int = DEFAULT_BUFFER_POOL_MB,
        max_threads: int = 1,
        max_db_mb: int | None = None,
    ) -> None:
        self.path = db_file(path)
        if not self.path.is_file():
            raise DatabaseUnavailableError(f"no Ladybug database at {path} (expected {self.path})")
        verify_database(self.path.parent, self.path.name)  # damaged files: refused before any query
        try:
            max_db = max_db_mb * 1024 * 1024 if max_db_mb else max(MIN_MAX_DB_SIZE, 2 * self.path.stat().st_size)
            self._db = ladybug.Database(
                str(self.path),
                read_only=True,
                buffer_pool_size=buffer_pool_mb * 1024 * 1024,
                max_num_threads=max_threads,
                max_db_size=power_of_two_at_least(max_db),
            )
            self._conn = ladybug.Connection(self._db, num_threads=max_threads)
            self._conn.set_query_timeout(int(timeout_ms))
        except GraphError:
            raise
        except Exception as exc:  # engine errors: lock held by a writer, corrupt files, ...
            raise DatabaseUnavailableError(f"cannot open Ladybug database {self.path}: {exc}") from exc
        self.timeout_ms = int(timeout_ms)
        self._lock = threading.Lock()
        self._schema: GraphSchema | None = None
        self._closed = False

    # -- queries -------------------------------------------------------------------------
    def run(
        self,
        query: str,
        params: Mapping[str, Any] | None = None,
        *,
        limit: int | None = None,
        timeout_ms: int | None = None,
    ) -> QueryResult:
        """``timeout_ms`` (when shorter than the backend's own) limits this query only."""
        if self._closed:
            raise DatabaseUnavailableError(f"backend for {self.path} is closed")
        if limit is not None and limit < 0:
            raise ValueError("limit must be >= 0")
        start = time.perf_counter()
        with self._lock:
            shorter = timeout_ms is not None and 0 < timeout_ms < self.timeout_ms
            try:
                if shorter:
                    self._conn.set_query_timeout(int(timeout_ms))
                result = self._conn.execute(query, dict(params or {}))
                if isinstance(result, list):  # several statements: never from the query path
                    for r in result:
                        r.close()
                    raise UnsafeQueryError("one statement per query")
                columns = tuple(result.get_column_names())
                rows: list[tuple[Any, ...]] = []
                truncated = False
                while result.has_next():
                    if limit is not None and len(rows) >= limit:
                        truncated = True
                        break
                    rows.append(tuple(_convert(v) for v in result.get_next()))
                result.close()
            except GraphError:
                raise
            except Exception as exc:
                raise _wrap_error(exc, query) from exc
            finally:
                if shorter:
                    self._conn.set_query_timeout(self.timeout_ms)
        return QueryResult(columns, tuple(rows), truncated, (time.perf_counter() - start) * 1e3)

    def _rows(self, query: str, params: Mapping[str, Any] | None = None) -> list[list[Any]]:
        """Trusted internal catalog queries (``CALL show_tables()`` …), all rows."""
        with self._lock:
            try:
                result = self._conn.execute(query, dict(params or {}))
                rows = result.get_all()
                result.close()
                return rows
            except Exception as exc:
                raise _wrap_error(exc, query) from exc

    def _arrow(self, query: str) -> Any:
        with self._lock:
            try:
                result = self._conn.execute(query)
                table = result.get_as_arrow()
                result.close()
                return table
            except Exception as exc:
                raise _wrap_error(exc, query) from exc

    # -- schema --------------------------------------------------------------------------
    def schema(self) -> GraphSchema:
        if self._schema is None:
            self._schema = self._read_schema()
        return self._schema

    def _read_schema(self) -> GraphSchema:
        tables = self._rows("CALL show_tables() RETURN name, type")
        labels: list[NodeLabel] = []
        rels: list[RelType] = []
        for name, kind in tables:
            # Table functions take literals, not parameters; names are validated identifiers.
            q = quote_identifier(name)
            info = self._rows(f"CALL table_info('{name}') RETURN *")
            if kind == "NODE":
                props = {row[1]: _TYPE_NAMES.get(row[2], row[2]) for row in info}
                pk = next((row[1] for row in info if row[4] is True), "id")
                (count,) = self._rows(f"MATCH (n:{q}) RETURN count(n)")[0]
                labels.append(NodeLabel(name, props, pk, int(count)))
            elif kind == "REL":
                props = {row[1]: _TYPE_NAMES.get(row[2], row[2]) for row in info}
                triples = []
                for src, dst, *_ in self._rows(f"CALL show_connection('{name}') RETURN *"):
                    (c,) = self._rows(
                        f"MATCH (:{quote_identifier(src)})-[r:{q}]->(:{quote_identifier(dst)}) RETURN count(r)"
                    )[0]
                    triples.append(Triple(src, name, dst, int(c)))
                rels.append(RelType(name, tuple(triples), props, sum(t.count for t in triples)))
        return GraphSchema.build(labels, rels)

    # -- fingerprint ---------------------------------------------------------------------
    def _node_digests(self, schema: GraphSchema) -> Iterator[tuple[str, int]]:
        for nl in schema.node_labels:
            names = list(nl.properties)
            cols = ", ".join(f"n.{quote_identifier(p)}" for p in names) or "1"
            table = self._arrow(f"MATCH (n:{quote_identifier(nl.label)}) RETURN {cols}")
            for row in zip(*(table.column(i).to_pylist() for i in range(len(names)))):
                yield nl.label, node_digest(nl.label, dict(zip(names, row, strict=True)))

    def _rel_digests(self, schema: GraphSchema) -> Iterator[tuple[str, int]]:
        labels = schema.labels
        for rt in schema.rel_types:
            names = list(rt.properties)
            for t in rt.triples:
                src_pk = quote_identifier(labels[t.source].primary_key)
                dst_pk = quote_identifier(labels[t.target].primary_key)
                cols = "".join(f", r.{quote_identifier(p)}" for p in names)
                table = self._arrow(
                    f"MATCH (a:{quote_identifier(t.source)})-[r:{quote_identifier(rt.type)}]->"
                    f"(b:{quote_identifier(t.target)}) RETURN a.{src_pk}, b.{dst_pk}{cols}"
                )
                columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
                for row in zip(*columns):
                    yield (
                        rt.type,
                        rel_digest(rt.type, t.source, row[0], t.target, row[1], dict(zip(names, row[2:], strict=True))),
                    )

    def fingerprints(self) -> tuple[str, dict[str, str]]:
        """The fingerprint and the per label / relationship type ones, in one pass
        (:func:`graph_fingerprints`)."""
        schema = self.schema()
        return graph_fingerprints(self._node_digests(schema), self._rel_digests(schema), schema)

    def fingerprint(self) -> str:
        return self.fingerprints()[0]

    # -- lifecycle -----------------------------------------------------------------------
    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._conn.close()
            self._db.close()

    def __enter__(self) -> LadybugBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
