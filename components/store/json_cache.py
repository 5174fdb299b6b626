"""Small JSON results computed once per key: the evaluation's per-system records
(``<data>/eval-cache/``) and the asset checks' results (``<data>/check-cache/``).

A key names everything the result depends on (input fingerprints, the code that computed it), so
a hit is the same result, never a stale one. A cache file appears whole (written aside, then one
rename); a broken or unreadable one is a miss and is computed again — never trusted, never an
error. A failure to *write* the cache is not an error either: the result is returned all the same.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["cache_key", "cached_result", "read_cached", "write_cached"]


def cache_key(name: str, parts: Iterable[str]) -> str:
    """``<name>-<hash of parts>``: a file name for one result."""
    h = hashlib.blake2b(digest_size=10)
    for part in parts:
        h.update(str(part).encode() + b"\0")
    return f"{name}-{h.hexdigest()}"


def read_cached(folder: str | Path | None, key: str) -> Any | None:
    """The JSON stored under ``key`` in ``folder``; None when absent, unreadable or broken."""
    path = None if folder is None else Path(folder) / f"{key}.json"
    if path is None or not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_cached(folder: str | Path | None, key: str, payload: Any) -> bool:
    """Store ``payload`` (JSON; other values as strings) under ``key``; False if it could not be."""
    if folder is None:
        return False
    target = Path(folder)
    tmp = target / f".{key}.{os.getpid()}.tmp"
    try:
        target.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(payload, default=str))
        tmp.replace(target / f"{key}.json")
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        return False
    return True


def cached_result(
    folder: str | Path | None, key: str, compute: Callable[[], dict[str, Any]]
) -> tuple[dict[str, Any], bool]:
    """``(result, cached)``: the dict stored under ``key``, or ``compute()`` stored there. The
    result goes through JSON either way, so a hit and a miss return the same values."""
    stored = read_cached(folder, key)
    if isinstance(stored, dict):
        return stored, True
    result = json.loads(json.dumps(compute(), default=str))
    write_cached(folder, key, result)
    return result, False
