"""What an import wrote, recorded beside the database so that damage is caught on open.

``load_graph`` writes ``import.json`` into the database folder after the engine has closed the
new database: the counts, and for every engine file its size, modification time and SHA-256.
:func:`verify_database` runs on every open of a Ladybug folder, cheaply: when a file's size and
modification time are what the import recorded, nothing is read; when the time differs the file
is hashed once and compared. A file that is missing, emptied, truncated, grown, garbled or
replaced is a :class:`~components.graph.errors.DamagedDatabaseError` naming the folder and the
fix. A folder without a manifest (made by an older version, or elsewhere) is accepted, except an
engine file of zero bytes, which is never a database.

A *valid but changed* graph is not damage: a new import writes a new manifest, and the
certifier's snapshot fingerprint turns the change into ``snapshot_drift`` per candidate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from components.graph.errors import DamagedDatabaseError
from components.store.fingerprint import sha256_file

__all__ = ["MANIFEST", "MANIFEST_VERSION", "verify_database", "write_manifest"]

MANIFEST: Final = "import.json"
MANIFEST_VERSION: Final = 1


def _entry(path: Path) -> dict[str, Any]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256_file(path)}


def write_manifest(folder: Path, db_file: str, stats: Mapping[str, Any]) -> None:
    """Record ``stats`` and the engine file's size, time and digest in ``folder/import.json``."""
    record = {**dict(stats), "manifest_version": MANIFEST_VERSION, "files": {db_file: _entry(folder / db_file)}}
    (folder / MANIFEST).write_text(json.dumps(record, indent=2))


def _damaged(folder: Path, what: str) -> DamagedDatabaseError:
    return DamagedDatabaseError(
        f"the database at {folder} is damaged: {what}; re-import it "
        f"(graphdojo graph import … --db {folder} --overwrite, or re-materialize its graph_snapshot)"
    )


def verify_database(folder: Path, db_file: str) -> None:
    """Refuse a damaged database folder (see the module docstring)."""
    path = folder / db_file
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise _damaged(folder, f"{db_file} cannot be read ({exc.strerror or exc})") from None
    manifest = folder / MANIFEST
    try:
        record = json.loads(manifest.read_text()) if manifest.is_file() else None
    except (OSError, ValueError, RecursionError) as exc:
        raise _damaged(folder, f"its {MANIFEST} is unreadable ({exc})") from None
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, dict) or not isinstance(files.get(db_file), dict):
        if size == 0:
            raise _damaged(folder, f"{db_file} is empty")
        return  # no manifest (an older import): nothing to compare with
    want = files[db_file]
    if size != want.get("size"):
        raise _damaged(folder, f"{db_file} is {size} bytes, its import wrote {want.get('size')}")
    if path.stat().st_mtime_ns == want.get("mtime_ns"):
        return
    if sha256_file(path) != want.get("sha256"):
        raise _damaged(folder, f"{db_file} is not the file its import wrote (changed or replaced)")
