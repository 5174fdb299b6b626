"""Normalisation of query values to plain, JSON-compatible Python values.

Both backends return exactly these shapes, so results (and their hashes) compare across engines:

* ``None``, ``bool``, ``int``, ``float``, ``str`` unchanged;
* ``Decimal`` (Ladybug's INT128 sums) -> ``int`` when integral, else ``float``;
* dates/times -> ISO-8601 strings; durations -> ISO-8601 ``PT<seconds>S``; UUID -> ``str``;
  bytes -> lowercase hex;
* lists/tuples -> lists; maps -> dicts with string keys;
* a node -> ``{"_label": <label>, <property>: <value>, ...}`` (null properties dropped, engine
  ids dropped); a relationship -> ``{"_type": <type>, ...}``; a path ->
  ``{"nodes": [...], "relationships": [...]}``. Backends convert their engine objects into
  these dicts through :func:`node_dict`, :func:`rel_dict` and :func:`path_dict`.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import hashlib
import json
import math
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["canonical_json", "node_dict", "normalize", "path_dict", "rel_dict", "row_digest"]


def _duration(td: _dt.timedelta) -> str:
    seconds = td.total_seconds()
    return f"PT{int(seconds) if seconds.is_integer() else seconds}S"


def normalize(value: Any) -> Any:
    """Convert one engine value (already stripped of engine graph objects) to a plain value.

    >>> normalize(decimal.Decimal("3"))
    3
    >>> normalize([_dt.date(2020, 1, 2), (1, 2)])
    ['2020-01-02', [1, 2]]
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): normalize(v) for k, v in value.items()}
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return _duration(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    iso = getattr(value, "iso_format", None)  # neo4j.time.* types
    if callable(iso):
        return iso()
    raise TypeError(f"cannot normalise value of type {type(value).__name__}")


def _entity(tag: str, name: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    """``{tag: name, <non-null, non-internal properties>}`` with properties in name order."""
    out: dict[str, Any] = {tag: name}
    for k in sorted(properties):
        v = properties[k]
        if v is not None and not k.startswith("_"):
            out[k] = normalize(v)
    return out


def node_dict(label: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    return _entity("_label", label, properties)


def rel_dict(rel_type: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    return _entity("_type", rel_type, properties)


def path_dict(nodes: Iterable[dict[str, Any]], rels: Iterable[dict[str, Any]]) -> dict[str, Any]:
    return {"nodes": list(nodes), "relationships": list(rels)}


def _json_default(value: Any) -> Any:
    raise TypeError(f"not a normalised value: {type(value).__name__}")


def canonical_json(value: Any) -> str:
    """Deterministic JSON of a normalised value (sorted keys, no whitespace, NaN as a string)."""
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(repr(value))
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_json_default)


def row_digest(row: Iterable[Any]) -> int:
    """A 128-bit digest of one normalised row, for order-independent multiset hashing."""
    data = canonical_json(list(row)).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(data, digest_size=16).digest(), "big")
