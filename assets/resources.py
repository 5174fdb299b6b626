"""Dagster resources shared by every layer."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from components.graph import GraphBackend, open_backend
from components.graph.ladybug import DEFAULT_BUFFER_POOL_MB
from components.store import PROJECT_ROOT, Catalog
from components.store.atomic import make_dirs, staged_dir
from components.store import data_root as default_data_root

__all__ = ["ArtifactStore", "GraphBackendResource", "PROJECT_ROOT"]



class ArtifactStore(dg.ConfigurableResource):
    """Where artifacts live: ``<data_root>/<layer>/<domain>/<fingerprint>/`` plus the DuckDB
    catalog ``<data_root>/catalog.duckdb``. ``data_root`` is absolute (never cwd-relative)."""

    data_root: str = str(default_data_root())

    @property
    def root(self) -> Path:
        return Path(self.data_root).expanduser().resolve()

    def layer_dir(self, layer: str, domain: str) -> Path:
        return make_dirs(self.root / layer / domain)

    @contextmanager
    def staged(self, layer: str, domain: str, fingerprint: str) -> Iterator[Path]:
        """Build ``<layer>/<domain>/<fingerprint>/`` out of sight; it appears whole when the block
        ends, never half-written (see :func:`components.store.atomic.staged_dir`)."""
        with staged_dir(self.layer_dir(layer, domain) / fingerprint) as tmp:
            yield tmp

    def catalog(self) -> Catalog:
        return Catalog(self.root / "catalog.duckdb")


class GraphBackendResource(dg.ConfigurableResource):
    """Opens read-only backends: a Ladybug snapshot folder or a Neo4j URI (credentials from
    the environment, never from config files)."""

    timeout_ms: int = 30_000
    buffer_pool_mb: int = DEFAULT_BUFFER_POOL_MB
    neo4j_user: str | None = None  # default: NEO4J_USER, else "neo4j"
    neo4j_password: str | None = None  # default: NEO4J_PASSWORD

    def open(self, location: str) -> GraphBackend:
        if "://" in location:
            creds = {
                k: v
                for k, v in {"user": self.neo4j_user, "password": self.neo4j_password}.items()
                if v is not None
            }
            return open_backend(location, timeout_ms=self.timeout_ms, **creds)
        return open_backend(location, timeout_ms=self.timeout_ms, buffer_pool_mb=self.buffer_pool_mb)
