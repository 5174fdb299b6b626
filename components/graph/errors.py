"""Errors raised by the graph layer.

Every error carries a stable machine-readable ``code`` (used in CLI JSON output and in traced
tool results) and a one-line human message. Nothing in the graph layer raises a bare engine
exception past its own boundary: engine errors are wrapped into one of these classes.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "DamagedDatabaseError",
    "DatabaseUnavailableError",
    "DialectError",
    "GraphError",
    "ImportFormatError",
    "QueryExecutionError",
    "QuerySyntaxError",
    "QueryTimeoutError",
    "SchemaError",
    "UnsafeQueryError",
]


class GraphError(Exception):
    """Base class: ``code`` is stable, ``str(err)`` is one line."""

    code = "graph_error"

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))

    @property
    def message(self) -> str:
        return str(self)

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class QuerySyntaxError(GraphError):
    """The query does not parse; ``line``/``column`` locate the problem when known."""

    code = "syntax_error"

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        where = f" (line {line}, column {column})" if line is not None else ""
        super().__init__(f"{message}{where}")
        self.line = line
        self.column = column


class UnsafeQueryError(GraphError):
    """Refused before execution: writes, procedure calls, file access, schema changes, etc."""

    code = "unsafe_query"


class DialectError(GraphError):
    """A Neo4j construct the embedded engine would answer differently (refused, never run)."""

    code = "dialect_divergence"


class SchemaError(GraphError):
    """Unknown label, relationship type or property."""

    code = "schema_error"


class QueryTimeoutError(GraphError):
    code = "timeout"


class QueryExecutionError(GraphError):
    """The engine rejected or failed the query at run time (binder errors, runtime errors)."""

    code = "execution_error"


class DatabaseUnavailableError(GraphError):
    """Missing, locked or unreadable database, or an unreachable server."""

    code = "database_unavailable"


class DamagedDatabaseError(DatabaseUnavailableError):
    """A database folder whose files are not what its import wrote (truncated, emptied, garbled,
    replaced): refused before any query runs on it."""

    code = "damaged_database"


class AuthenticationError(GraphError):
    code = "authentication_error"


class ImportFormatError(GraphError):
    """A malformed import file; names the file and, when known, the line."""

    code = "import_format_error"

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message}")
        self.path = path
        self.line = line
