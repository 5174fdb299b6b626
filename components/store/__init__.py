"""Artifact store: DuckDB catalog of materialized artifacts and fingerprint chaining."""

from components.store.catalog import ArtifactRecord, Catalog
from components.store.fingerprint import chain_fingerprint, hash_path
from components.store.paths import PROJECT_ROOT, data_root

__all__ = ["PROJECT_ROOT", "ArtifactRecord", "Catalog", "chain_fingerprint", "data_root", "hash_path"]
