"""Artifacts appear whole or not at all, and storage failures say what happened.

Every layer builds its artifact folder out of sight, in ``<parent>/.staging-<pid>-<random>-<name>``,
and moves it into place with one ``rename`` only after the last file is written; the catalog row
is recorded after that. A materialization killed midway (``kill -9``, OOM, power) therefore leaves
at most a staging folder, never a half-written artifact or a catalog row pointing at one, and the
next run sweeps staging folders whose process is gone (:func:`sweep_staging`).

Disk-full, quota, read-only and permission failures become :class:`StorageError`, whose message
names the path, the cause and what to do — instead of an ``OSError`` deep inside pyarrow, torch
or DuckDB.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "STAGING_PREFIX",
    "StorageError",
    "as_storage_error",
    "land",
    "make_dirs",
    "new_staging_dir",
    "staged_dir",
    "sweep_staging",
]

STAGING_PREFIX = ".staging-"

_ADVICE = {
    errno.ENOSPC: "the disk is full: free space (or point GRAPHDOJO_DATA at a larger disk) and re-run; "
    "nothing partial was kept",
    errno.EDQUOT: "the disk quota is exhausted: free space (or point GRAPHDOJO_DATA elsewhere) and re-run",
    errno.EFBIG: "the file size limit was reached (ulimit -f): raise it and re-run",
    errno.EACCES: "permission denied: make the data folder writable by this user "
    "(or point GRAPHDOJO_DATA at one that is)",
    errno.EPERM: "operation not permitted: make the data folder writable by this user "
    "(or point GRAPHDOJO_DATA at one that is)",
    errno.EROFS: "the file system is read-only: point GRAPHDOJO_DATA at a writable folder",
}


class StorageError(OSError):
    """A storage failure with a message a user can act on (``errno`` kept)."""


#: below this many free bytes, an engine's I/O error is taken for a full disk
NEARLY_FULL_BYTES = 1 << 20


def _free_bytes(path: str | Path) -> int | None:
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def as_storage_error(exc: BaseException, path: str | Path | None = None) -> StorageError | None:
    """The :class:`StorageError` for ``exc`` when it is a disk-full / quota / permission /
    read-only failure (an ``OSError``, or an engine error — DuckDB, Ladybug — that says so), else
    ``None``. Engines do not always say it: any failure while the file system of ``path`` has
    less than :data:`NEARLY_FULL_BYTES` free is reported as a full disk."""
    if isinstance(exc, StorageError):
        return exc
    code = exc.errno if isinstance(exc, OSError) else None
    if code is None:
        text = str(exc).lower()
        for needle, guess in (
            ("no space left", errno.ENOSPC),
            ("permission denied", errno.EACCES),
            ("read-only file system", errno.EROFS),
            ("disk quota", errno.EDQUOT),
            ("file too large", errno.EFBIG),
        ):
            if needle in text:
                code = guess
                break
    if code not in _ADVICE and path is not None:
        free = _free_bytes(path)
        if free is not None and free < NEARLY_FULL_BYTES:
            code = errno.ENOSPC
    if code not in _ADVICE:
        return None
    where = path or getattr(exc, "filename", None) or "the data folder"
    err = StorageError(code, f"cannot write {where}: {_ADVICE[code]} ({exc})")
    err.__cause__ = exc
    return err


def _host() -> str:
    return "".join(c for c in socket.gethostname() if c.isalnum())[:32] or "host"


def _owner_alive(name: str) -> bool:
    """Whether the process that created staging entry ``name`` may still be running. Entries of
    other hosts (a shared volume) are never judged from here."""
    pid, _, rest = name[len(STAGING_PREFIX) :].partition("-")
    host = rest.split("-", 1)[0]
    if host != _host():
        return True
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def _staging_name(name: str) -> str:
    return f"{STAGING_PREFIX}{os.getpid()}-{_host()}-{secrets.token_hex(4)}-{name}"


def sweep_staging(parent: str | Path) -> list[Path]:
    """Remove staging entries in ``parent`` left by processes that no longer run; returns them."""
    parent = Path(parent)
    removed = []
    if not parent.is_dir():
        return removed
    for entry in parent.iterdir():
        if entry.name.startswith(STAGING_PREFIX) and not _owner_alive(entry.name):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


def make_dirs(path: str | Path) -> Path:
    """``mkdir -p path``; a full disk or a permission problem is a :class:`StorageError`."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise (as_storage_error(exc, path) or exc) from exc
    return path


def new_staging_dir(parent: str | Path, name: str = "artifact") -> Path:
    """A fresh, empty staging folder in ``parent`` (owned by this process; swept once it dies)."""
    parent = make_dirs(parent)
    try:
        sweep_staging(parent)
        path = parent / _staging_name(name)
        path.mkdir()
    except OSError as exc:
        raise (as_storage_error(exc, parent) or exc) from exc
    return path


def land(staging: Path, final: Path) -> None:
    """Move the complete folder ``staging`` to ``final`` with one rename, replacing an older
    ``final`` (an incomplete earlier attempt) — which is moved aside first and then removed."""
    if final.exists():
        old = final.parent / _staging_name(f"old-{final.name}")
        final.rename(old)
        shutil.rmtree(old, ignore_errors=True)
    staging.rename(final)


@contextmanager
def staged_dir(final: str | Path) -> Iterator[Path]:
    """Build the folder ``final`` atomically: write into the yielded staging folder; when the block
    ends normally it replaces ``final`` (an older incomplete copy included) with one rename; when
    it raises, the staging folder is removed and ``final`` is untouched. Storage failures surface
    as :class:`StorageError`."""
    final = Path(final)
    staging = new_staging_dir(final.parent, final.name)
    try:
        yield staging
        land(staging, final)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        storage = as_storage_error(exc, final) if isinstance(exc, Exception) else None
        if storage is not None and storage is not exc:
            raise storage from exc
        raise
