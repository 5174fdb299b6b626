"""The Dagster resource shared by every layer: where artifacts live."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from components.store import Catalog
from components.store import data_root as default_data_root

__all__ = ["ArtifactStore"]


class ArtifactStore(dg.ConfigurableResource):
    """Where artifacts live: ``<data_root>/<layer>/<domain>/<fingerprint>/`` plus the DuckDB
    catalog ``<data_root>/catalog.duckdb``. ``data_root`` is absolute (never cwd-relative)."""

    data_root: str = str(default_data_root())

    @property
    def root(self) -> Path:
        return Path(self.data_root).expanduser().resolve()

    def catalog(self) -> Catalog:
        return Catalog(self.root / "catalog.duckdb")
