"""Dagster resources shared by every layer."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from components.store import Catalog

__all__ = ["ArtifactStore", "PROJECT_ROOT"]

PROJECT_ROOT = Path(__file__).resolve().parents[1]


class ArtifactStore(dg.ConfigurableResource):
    """Where artifacts live: ``<data_root>/<layer>/<domain>/<fingerprint>/`` plus the DuckDB
    catalog ``<data_root>/catalog.duckdb``. ``data_root`` is absolute (never cwd-relative)."""

    data_root: str = str(PROJECT_ROOT / "data")

    @property
    def root(self) -> Path:
        return Path(self.data_root).expanduser().resolve()

    def layer_dir(self, layer: str, domain: str) -> Path:
        path = self.root / layer / domain
        path.mkdir(parents=True, exist_ok=True)
        return path

    def catalog(self) -> Catalog:
        return Catalog(self.root / "catalog.duckdb")
