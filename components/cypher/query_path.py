"""The one read-only query path: every user- or model-written query reaches a backend here.

    query ─► parse ─► safety (tokens, AST) ─► schema check ─► dialect ─► backend.run

:class:`ReadOnlyQueryPath` wraps any :class:`~components.graph.backend.GraphBackend`. For a
``"ladybug"`` backend the Neo4j-dialect query is rewritten (:func:`~components.cypher.compat.
to_ladybug`); for ``"neo4j"`` only RETURN columns are aliased, so both engines name columns the
same. Preparation is cached per query text, so :meth:`ReadOnlyQueryPath.run` on a repeated query
costs a dict lookup and a parameter check on top of ``backend.run``.

Every failure is a :class:`~components.graph.errors.GraphError` subclass.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from cypherast.errors import CypherastError

from components.cypher.compat import LADYBUG_MAX_HOPS, to_ladybug, to_neo4j
from components.cypher.safety import check_read_only
from components.cypher.schema_check import check_schema
from components.graph.backend import GraphBackend, QueryResult
from components.graph.errors import (
    DialectError,
    GraphError,
    QueryExecutionError,
    QuerySyntaxError,
)
from components.graph.schema import GraphSchema

__all__ = [
    "MAX_PARAM_BYTES",
    "MAX_RESULT_BYTES",
    "PreparedQuery",
    "ReadOnlyQueryPath",
    "cap_result",
    "check_params",
    "json_size",
]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MAX_PARAM_DEPTH: Final = 32
#: Parameters larger than this (counted as the JSON they would be) are refused.
MAX_PARAM_BYTES: Final = 1 << 20
#: A capped query (``limit`` given: every traced and evidence query) keeps at most this many bytes
#: of rows (as canonical JSON); the rows after the cut are dropped and the result is truncated.
MAX_RESULT_BYTES: Final = 2 << 20
_PARAM_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SCALARS: Final = (str, bool, type(None))


def _check_value(value: Any, where: str, depth: int, budget: list[int]) -> None:
    kind = type(value)
    budget[0] -= len(value) + 2 if kind is str else 8
    if budget[0] < 0:
        raise QueryExecutionError(f"parameters are larger than {MAX_PARAM_BYTES} bytes")
    if kind in _SCALARS:
        return
    if kind is int:
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise QueryExecutionError(f"parameter {where}: integer {value} is outside INT64")
        return
    if kind is float:
        if not math.isfinite(value):
            raise QueryExecutionError(f"parameter {where}: {value} is not a finite number")
        return
    if depth >= _MAX_PARAM_DEPTH:
        raise QueryExecutionError(f"parameter {where}: nested deeper than {_MAX_PARAM_DEPTH}")
    if kind in (list, tuple):
        for i, item in enumerate(value):
            _check_value(item, f"{where}[{i}]", depth + 1, budget)
        return
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise QueryExecutionError(f"parameter {where}: map keys must be strings")
            budget[0] -= len(key)
            _check_value(item, f"{where}.{key}", depth + 1, budget)
        return
    raise QueryExecutionError(
        f"parameter {where}: {kind.__name__} values are not allowed (use JSON-like values: "
        "null, bool, int, float, str, lists and string-keyed maps of these)"
    )


def check_params(params: Mapping[str, Any] | None) -> None:
    """Refuse parameter values that are not JSON-like (plain Python scalars, lists, str-keyed
    dicts), non-finite floats, integers outside INT64 and invalid names, with the offending path.

    >>> check_params({"name": "Ada", "ids": [1, 2], "filter": {"min": 0.5}})
    >>> check_params({"when": object()})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    components.graph.errors.QueryExecutionError: parameter $when: object values are not allowed (use JSON-like ...)
    """
    if params is None:
        return
    if not isinstance(params, Mapping):
        raise QueryExecutionError(f"parameters must be a mapping, not {type(params).__name__}")
    budget = [MAX_PARAM_BYTES]
    for name, value in params.items():
        if type(name) is not str or not _PARAM_NAME.fullmatch(name):
            raise QueryExecutionError(f"invalid parameter name {name!r}")
        _check_value(value, f"${name}", 0, budget)


def json_size(value: Any) -> int:
    """About the bytes ``value`` takes as JSON (strings by length, every other scalar 8)."""
    kind = type(value)
    if kind is str:
        return len(value) + 2
    if kind is list or kind is tuple:
        return 2 + sum(json_size(v) for v in value)
    if kind is dict:
        return 2 + sum(len(k) + 3 + json_size(v) for k, v in value.items())
    return 8


def cap_result(result: QueryResult, max_bytes: int = MAX_RESULT_BYTES) -> QueryResult:
    """``result`` with its rows cut where they pass about ``max_bytes`` of JSON (then truncated).
    The sandbox and the certifier's re-execution both get results through
    :meth:`ReadOnlyQueryPath.run`, so a capped result re-executes to the same truncation state."""
    used = 0
    for i, row in enumerate(result.rows):
        used += json_size(row)
        if used > max_bytes:
            return QueryResult(result.columns, result.rows[:i], True, result.elapsed_ms)
    return result


@dataclass(frozen=True, slots=True)
class PreparedQuery:
    """A vetted query in the backend's dialect and the parameter names it references."""

    text: str
    parameters: frozenset[str]


class ReadOnlyQueryPath:
    """Parse, refuse, check and rewrite Neo4j-dialect queries, then run them on ``backend``.

    ``schema`` enables the static schema check (unknown labels, types, properties).
    """

    def __init__(
        self,
        backend: GraphBackend,
        *,
        schema: GraphSchema | None = None,
        cache_size: int = 4096,
    ) -> None:
        dialect = getattr(backend, "dialect", None)
        if dialect not in ("ladybug", "neo4j"):
            raise DialectError(f"unknown backend dialect {dialect!r}")
        self.backend = backend
        self.schema = schema
        self.dialect: str = dialect
        self.max_hops: int = int(getattr(backend, "max_hops", LADYBUG_MAX_HOPS))
        self._cache: dict[str, PreparedQuery] = {}
        self._cache_size = cache_size

    # -- preparation ---------------------------------------------------------------------------

    def _prepare(self, query: str) -> PreparedQuery:
        try:
            parsed = check_read_only(query)
            if self.schema is not None:
                check_schema(parsed, self.schema)
            if self.dialect == "ladybug":
                text = to_ladybug(parsed, max_hops=self.max_hops)
            else:
                text = to_neo4j(parsed)
        except GraphError:
            raise
        except CypherastError as err:
            raise QuerySyntaxError(str(err).splitlines()[0]) from err
        except RecursionError:
            raise QuerySyntaxError("query is nested too deeply") from None
        except Exception as err:  # a bug must still surface as a GraphError, never a crash
            raise DialectError(f"could not prepare the query ({type(err).__name__}: {err})") from err
        return PreparedQuery(text=text, parameters=parsed.parameters)

    def prepared(self, query: str) -> PreparedQuery:
        """The cached :class:`PreparedQuery` for ``query`` (prepared on first use)."""
        entry = self._cache.get(query)
        if entry is None:
            entry = self._prepare(query)
            if len(self._cache) >= self._cache_size:
                self._cache.pop(next(iter(self._cache)))
            self._cache[query] = entry
        return entry

    def prepare(self, query: str) -> str:
        """The text sent to the backend for ``query``; raises the refusal as a GraphError."""
        return self.prepared(query).text

    # -- execution -----------------------------------------------------------------------------

    def run(
        self,
        query: str,
        params: Mapping[str, Any] | None = None,
        *,
        limit: int | None = None,
        timeout_ms: int | None = None,
    ) -> QueryResult:
        """Run one read-only query. ``limit`` caps the rows (the backend fetches one more to set
        ``truncated``) and, with it, the bytes (:func:`cap_result`); ``timeout_ms`` shortens the
        backend's own time limit for this query (a sandbox cell's remaining time)."""
        entry = self._cache.get(query)
        if entry is None:
            entry = self.prepared(query)
        if limit is not None and (type(limit) is not int or limit < 0):
            raise QueryExecutionError(f"limit must be a non-negative integer, not {limit!r}")
        if params:
            check_params(params)
        if entry.parameters and (params is None or not entry.parameters <= params.keys()):
            missing = sorted(entry.parameters - set(params or ()))
            raise QueryExecutionError("missing parameter(s): " + ", ".join(f"${name}" for name in missing))
        if timeout_ms is not None:
            res = self.backend.run(entry.text, params, limit=limit, timeout_ms=max(1, int(timeout_ms)))
        else:
            res = self.backend.run(entry.text, params, limit=limit)
        return res if limit is None else cap_result(res)
