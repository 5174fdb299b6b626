"""Lineage fingerprints: a hash chain like ``datasets``' ``update_fingerprint``.

An artifact's fingerprint hashes its parents' fingerprints, the code version of the step that
made it (:mod:`components.store.digest`), and its parameters — so "this dataset came from that
snapshot with that config" is checkable from the catalog alone.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["chain_fingerprint", "hash_path", "read_parquet", "write_parquet"]


def chain_fingerprint(parents: Iterable[str], version: str, params: Mapping[str, Any]) -> str:
    """A 32-hex-digit hash of the parents (in order), the version and the params.

    >>> chain_fingerprint(["abc"], "v1", {"n": 1}) == chain_fingerprint(["abc"], "v1", {"n": 1})
    True
    >>> chain_fingerprint(["abc"], "v1", {"n": 1}) == chain_fingerprint(["abc"], "v2", {"n": 1})
    False
    """
    payload = json.dumps(
        {"parents": list(parents), "version": version, "params": params},
        sort_keys=True,
        default=str,
    )
    return hashlib.blake2b(payload.encode(), digest_size=16).hexdigest()


def sha256_file(path: str | Path, chunk: int = 8 << 20) -> str:
    """The SHA-256 of one file's bytes (hex), read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def hash_path(path: str | Path) -> str:
    """Content hash of a file, or of every file under a folder (relative names included)."""
    root = Path(path)
    h = hashlib.blake2b(digest_size=16)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for f in files:
        h.update(str(f.relative_to(root) if f != root else f.name).encode() + b"\0")
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()


def write_parquet(rows: Iterable[Mapping[str, Any]], path: str | Path) -> Path:
    """Write rows as Parquet atomically (temp file + rename): a crash never leaves a partial
    file. No rows: an empty table with an ``id`` column."""
    import os
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [dict(r) for r in rows]
    table = pa.Table.from_pylist(rows) if rows else pa.table({"id": pa.array([], pa.string())})
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_parquet(path: str | Path) -> list[dict[str, Any]]:
    """The rows :func:`write_parquet` wrote, as dicts."""
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()
