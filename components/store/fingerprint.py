"""Lineage fingerprints: a hash chain like ``datasets``' ``update_fingerprint``.

An artifact's fingerprint hashes its parents' fingerprints, the code/config version of the step
that made it, and its parameters — so "this dataset came from that snapshot with that config"
is checkable from the catalog alone.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["chain_fingerprint", "hash_path"]


def chain_fingerprint(parents: Iterable[str], version: str, params: Mapping[str, Any]) -> str:
    """>>> chain_fingerprint(["abc"], "v1", {"n": 1}) == chain_fingerprint(["abc"], "v1", {"n": 1})
    True
    """
    payload = json.dumps(
        {"parents": list(parents), "version": version, "params": params},
        sort_keys=True,
        default=str,
    )
    return hashlib.blake2b(payload.encode(), digest_size=16).hexdigest()


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
