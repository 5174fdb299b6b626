"""Artifact store: the data root, the DuckDB catalog of materialized artifacts, fingerprint
chaining, code digests and the one way layers make artifacts (:mod:`components.store.artifact`)."""

from components.store.catalog import ArtifactRecord, Catalog
from components.store.fingerprint import chain_fingerprint, hash_path
from components.store.paths import data_root

__all__ = ["ArtifactRecord", "Catalog", "chain_fingerprint", "data_root", "hash_path"]
