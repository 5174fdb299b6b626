"""DuckDB catalog of materialized artifacts (``data/catalog.duckdb``).

One row per (asset, domain, fingerprint): parent fingerprints, config, row counts, the artifact's
path and free-form metadata. Values always go in as parameters. The connection is opened per
operation so that no process holds the file lock longer than a statement.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import duckdb

from components.store.atomic import as_storage_error, make_dirs

__all__ = ["ArtifactRecord", "Catalog"]

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
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        make_dirs(self.path.parent)
        with self._connect() as con:
            con.execute(_DDL)

    @contextmanager
    def _connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One connection per operation; a full disk or an unwritable catalog becomes a
        :class:`~components.store.atomic.StorageError` naming the catalog file."""
        try:
            con = duckdb.connect(str(self.path))
            try:
                yield con
            finally:
                con.close()
        except (OSError, duckdb.Error) as exc:
            storage = as_storage_error(exc, self.path)
            if storage is None:
                raise
            raise storage from exc

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
