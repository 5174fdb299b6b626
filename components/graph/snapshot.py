"""Graph snapshots: import a domain's source once per content fingerprint.

:data:`GRAPH_SNAPSHOT` is the ``graph_snapshot`` layer (:func:`build_graph_snapshot`): it reads
a source, loads it into a Ladybug database and lands it under
``<data_root>/graphs/<domain>/<fingerprint>/`` (an existing folder with the same fingerprint is
reused, so an unchanged source costs one import and no copy). For a Neo4j
source nothing is copied: the snapshot records the live graph's schema and fingerprint.
:func:`source_fingerprint` is the cheap check a sensor runs: it hashes the source files (or the
generator's code and parameters) without importing anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from components.graph.errors import ImportFormatError
from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.schema import GraphSchema
from components.store.artifact import Artifact, BuildContext, Layer
from components.store.atomic import as_storage_error
from components.store.digest import code_digest
from components.store.fingerprint import chain_fingerprint, hash_path

__all__ = ["GENERATOR_MODULE", "GRAPH_SNAPSHOT", "SourceSpec", "build_graph_snapshot", "source_fingerprint"]

#: the demo generator's module: its code is part of a generator source's fingerprint
GENERATOR_MODULE: Final = "components.graph.sources.demo"


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


def _generator_code_digest() -> str:
    """Digest of the generator's code (``sources/demo.py`` and everything it imports in the
    package: :func:`~components.store.digest.code_digest`)."""
    return code_digest([GENERATOR_MODULE])


def source_fingerprint(spec: SourceSpec) -> str:
    """Cheap fingerprint of the source itself (not the imported graph). For ``generator``
    sources it hashes the generator's code and parameters, so a changed generator is a changed
    source."""
    if spec.format == "generator":
        return chain_fingerprint([], f"generator-{_generator_code_digest()}", spec.to_json())
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


def _summary(schema: GraphSchema, backend: str, parts: Mapping[str, str], spec: SourceSpec) -> dict[str, Any]:
    return {
        "schema": schema.to_json(),
        "backend": backend,
        "parts": dict(parts),
        "source_fingerprint": source_fingerprint(spec),
    }


def build_graph_snapshot(
    inputs: Mapping[str, Artifact], spec: SourceSpec, out_dir: Path, ctx: BuildContext
) -> Artifact:
    """The ``graph_snapshot`` layer (content-addressed): import ``spec`` into a Ladybug database in
    ``out_dir``, which lands under the graph's content fingerprint (an identical earlier import
    is kept instead); the stored database is opened read-only once to check it. A Neo4j source
    is not copied: the artifact is the live graph's URI, fingerprint and schema. The summary
    holds the schema, the per-part fingerprints (incremental re-certification) and the source
    fingerprint (what the sensor compares)."""
    from components.graph import open_backend

    if spec.format == "neo4j":
        backend = open_backend(spec.src, **dict(spec.options))
        try:
            (fingerprint, parts), schema = backend.fingerprints(), backend.schema()
        finally:
            backend.close()
        return GRAPH_SNAPSHOT.artifact(
            inputs,
            spec,
            ctx,
            path=spec.src,
            fingerprint=fingerprint,
            counts=_counts(schema),
            summary=_summary(schema, "neo4j", parts, spec),
        )
    from components.graph.sources import read_source

    data = read_source(spec.format, spec.src, **dict(spec.options))
    try:
        load_graph(data, out_dir, overwrite=True)
        with LadybugBackend(out_dir) as backend:
            fingerprint, parts = backend.fingerprints()
            schema = backend.schema()
        with open_backend(str(out_dir)) as stored:  # read-only, as every later reader opens it
            if stored.schema() != schema:
                raise RuntimeError(f"the stored snapshot {out_dir} does not match what was imported")
    except Exception as exc:
        storage = as_storage_error(exc, out_dir)  # a full disk inside the engine says "IO exception"
        if storage is None:
            raise
        raise storage from exc
    return GRAPH_SNAPSHOT.artifact(
        inputs,
        spec,
        ctx,
        path=out_dir,
        fingerprint=fingerprint,
        counts=_counts(schema),
        summary=_summary(schema, "ladybug", parts, spec),
    )


def _counts(schema: GraphSchema) -> dict[str, int]:
    return {"nodes": schema.node_count, "relationships": schema.rel_count}


GRAPH_SNAPSHOT: Final = Layer(
    "graph_snapshot", build_graph_snapshot, SourceSpec.to_json, content_addressed=True, folder="graphs"
)
