"""Graph snapshots: import a domain's source once per content fingerprint.

``build_snapshot`` reads a source, loads it into a Ladybug database, computes the graph's
content fingerprint and moves the database to ``<root>/<fingerprint>/`` (an existing folder
with the same fingerprint is reused, so an unchanged source costs one import and no copy).
For a Neo4j source nothing is copied: the snapshot records the live graph's schema and
fingerprint. ``source_fingerprint`` is the cheap check a sensor runs: it hashes the source
files (or the generator's parameters) without importing anything.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.graph.errors import ImportFormatError
from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.schema import GraphSchema
from components.store.atomic import as_storage_error, new_staging_dir
from components.store.fingerprint import chain_fingerprint, hash_path

__all__ = ["SNAPSHOT_VERSION", "Snapshot", "SourceSpec", "build_snapshot", "source_fingerprint"]

SNAPSHOT_VERSION = "snapshot-1"


@dataclass(frozen=True)
class SourceSpec:
    """Where a domain's graph comes from.

    ``format`` is one of the importers (``generator``, ``grbench-json``, ``csv``,
    ``cypher-script``) or ``neo4j`` (``src`` is then the bolt/neo4j URI and ``options`` may hold
    ``user``, ``password`` (or env ``NEO4J_USER``/``NEO4J_PASSWORD``), ``database``).
    """

    format: str
    src: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        opts = {k: v for k, v in self.options.items() if k != "password"}
        return {"format": self.format, "src": self.src, "options": opts}


@dataclass(frozen=True)
class Snapshot:
    domain: str
    backend: str
    location: str  # Ladybug folder or Neo4j URI
    fingerprint: str
    schema: GraphSchema
    source: SourceSpec
    parts: Mapping[str, str] = field(default_factory=dict)  # per label / type fingerprints

    @property
    def counts(self) -> dict[str, int]:
        return {"nodes": self.schema.node_count, "relationships": self.schema.rel_count}


def source_fingerprint(spec: SourceSpec) -> str:
    """Cheap fingerprint of the source itself (not the imported graph)."""
    if spec.format == "generator":
        from components.graph.sources import demo

        version = getattr(demo, "GENERATOR_VERSION", "1")
        return chain_fingerprint([], f"generator-{version}", spec.to_json())
    if spec.format == "neo4j":
        from components.graph import open_backend

        backend = open_backend(spec.src, **dict(spec.options))
        try:
            return backend.fingerprint()
        finally:
            backend.close()
    path = Path(spec.src)
    if not path.exists():
        raise ImportFormatError("source not found", path=str(path))
    return chain_fingerprint([hash_path(path)], spec.format, spec.to_json())


def build_snapshot(domain: str, spec: SourceSpec, root: str | Path) -> Snapshot:
    """Import ``spec`` under ``root/<fingerprint>/`` (reusing an identical earlier import)."""
    if spec.format == "neo4j":
        from components.graph import open_backend

        backend = open_backend(spec.src, **dict(spec.options))
        try:
            fingerprint, parts = backend.fingerprints()
            return Snapshot(domain, "neo4j", spec.src, fingerprint, backend.schema(), spec, parts)
        finally:
            backend.close()

    from components.graph.sources import read_source

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    data = read_source(spec.format, spec.src, **dict(spec.options))
    staging = new_staging_dir(root, "snapshot")
    try:
        load_graph(data, staging / "db", overwrite=True)
        with LadybugBackend(staging / "db") as backend:
            fingerprint, parts = backend.fingerprints()
            schema = backend.schema()
        final = root / fingerprint
        if not (final / "graph.lbug").is_file():
            shutil.rmtree(final, ignore_errors=True)
            (staging / "db").rename(final)
    except Exception as exc:
        storage = as_storage_error(exc, root)  # a full disk inside the engine says "IO exception"
        if storage is None:
            raise
        raise storage from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Snapshot(domain, "ladybug", str(final), fingerprint, schema, spec, parts)
