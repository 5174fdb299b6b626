"""DuckDB catalog of materialized artifacts (``data/catalog.duckdb``).

One row per (asset, domain, fingerprint): parent fingerprints, config, row counts, the artifact's
path and free-form metadata. Values always go in as parameters. The connection is opened per
operation so that no process holds the file lock longer than a statement.

DuckDB lets one process at a time open the file; Dagster runs steps in several processes (the
multiprocess executor, the UI's runs, a sensor's tick, a test polling the catalog), so an
operation that finds the file locked by another process waits and retries — with a growing,
jittered back-off, for at most ``lock_timeout`` seconds — before it gives up with
:class:`CatalogBusyError` naming the file.
"""

from __future__ import annotations

import datetime as _dt
import json
import random
import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import duckdb

from components.store.atomic import as_storage_error, make_dirs

__all__ = ["ArtifactRecord", "Catalog", "CatalogBusyError"]

#: seconds an operation waits for another process's lock on the catalog file before it fails
LOCK_TIMEOUT_S = 120.0


class CatalogBusyError(RuntimeError):
    """Another process held the catalog file's lock for longer than the operation would wait."""


def _is_lock_conflict(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.IOException) and "could not set lock" in str(exc).lower()


_DDL = """
CREATE TABLE IF NOT EXISTS artifacts (
    asset        VARCHAR NOT NULL,
    domain       VARCHAR NOT NULL,
    fingerprint  VARCHAR NOT NULL,
    parents      VARCHAR NOT NULL,   -- JSON list of parent fingerprints
    config       VARCHAR NOT NULL,   -- JSON
    row_counts   VARCHAR NOT NULL,   -- JSON
    path         VARCHAR,
    metadata     VARCHAR NOT NULL,   -- JSON
    created_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (asset, domain, fingerprint)
)
"""


@dataclass(frozen=True)
class ArtifactRecord:
    asset: str
    domain: str
    fingerprint: str
    parents: Sequence[str] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    row_counts: Mapping[str, int] = field(default_factory=dict)
    path: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_at: _dt.datetime | None = None


class Catalog:
    def __init__(self, path: str | Path, *, lock_timeout: float = LOCK_TIMEOUT_S) -> None:
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        make_dirs(self.path.parent)
        with self._connect() as con:
            con.execute(_DDL)

    @contextmanager
    def _connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One connection per operation; a full disk or an unwritable catalog becomes a
        :class:`~components.store.atomic.StorageError` naming the catalog file."""
        try:
            con = self._open()
            try:
                yield con
            finally:
                con.close()
        except (OSError, duckdb.Error) as exc:
            storage = as_storage_error(exc, self.path)
            if storage is None:
                raise
            raise storage from exc

    def _open(self) -> duckdb.DuckDBPyConnection:
        """Connect, waiting while another process holds the file's lock (see the module text)."""
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.01
        while True:
            try:
                return duckdb.connect(str(self.path))
            except duckdb.IOException as exc:
                if not _is_lock_conflict(exc):
                    raise
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CatalogBusyError(
                        f"the catalog {self.path} stayed locked by another process for "
                        f"{self.lock_timeout:.0f} s ({exc})"
                    ) from exc
                time.sleep(min(left, delay * (0.5 + random.random())))
                delay = min(delay * 2, 0.5)

    def record(self, rec: ArtifactRecord) -> ArtifactRecord:
        created = rec.created_at or _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None)
        with self._connect() as con:
            con.execute(
                "INSERT OR REPLACE INTO artifacts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    rec.asset,
                    rec.domain,
                    rec.fingerprint,
                    json.dumps(list(rec.parents)),
                    json.dumps(rec.config, sort_keys=True, default=str),
                    json.dumps(rec.row_counts, sort_keys=True),
                    rec.path,
                    json.dumps(rec.metadata, sort_keys=True, default=str),
                    created,
                ],
            )
        return ArtifactRecord(**{**rec.__dict__, "created_at": created})

    @staticmethod
    def _row(row: Sequence[Any]) -> ArtifactRecord:
        return ArtifactRecord(
            asset=row[0],
            domain=row[1],
            fingerprint=row[2],
            parents=tuple(json.loads(row[3])),
            config=json.loads(row[4]),
            row_counts=json.loads(row[5]),
            path=row[6],
            metadata=json.loads(row[7]),
            created_at=row[8],
        )

    def get(self, asset: str, domain: str, fingerprint: str) -> ArtifactRecord | None:
        with self._connect() as con:
            row = con.execute(
                "SELECT * FROM artifacts WHERE asset = ? AND domain = ? AND fingerprint = ?",
                [asset, domain, fingerprint],
            ).fetchone()
        return None if row is None else self._row(row)

    def latest(self, asset: str, domain: str) -> ArtifactRecord | None:
        with self._connect() as con:
            row = con.execute(
                "SELECT * FROM artifacts WHERE asset = ? AND domain = ? ORDER BY created_at DESC LIMIT 1",
                [asset, domain],
            ).fetchone()
        return None if row is None else self._row(row)

    def history(self, asset: str, domain: str) -> list[ArtifactRecord]:
        with self._connect() as con:
            rows = con.execute(
                "SELECT * FROM artifacts WHERE asset = ? AND domain = ? ORDER BY created_at",
                [asset, domain],
            ).fetchall()
        return [self._row(r) for r in rows]
