"""Artifact store: DuckDB catalog of materialized artifacts and fingerprint chaining."""

from components.store.catalog import ArtifactRecord, Catalog
from components.store.fingerprint import chain_fingerprint, hash_path

__all__ = ["ArtifactRecord", "Catalog", "chain_fingerprint", "hash_path"]
