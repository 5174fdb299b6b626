"""Graph layer: backends (embedded Ladybug, Neo4j), schema, fingerprint, importers."""

from __future__ import annotations

from components.graph.backend import Dialect, GraphBackend, QueryResult
from components.graph.schema import GraphSchema, NodeLabel, RelType, Triple

__all__ = [
    "Dialect",
    "GraphBackend",
    "GraphSchema",
    "NodeLabel",
    "QueryResult",
    "RelType",
    "Triple",
    "open_backend",
]


def open_backend(spec: str, **options: object) -> GraphBackend:
    """Open a backend from a location: ``bolt://``/``neo4j://`` URIs open Neo4j (credentials in
    ``options`` or ``NEO4J_USER``/``NEO4J_PASSWORD``), anything else is a Ladybug folder."""
    import os

    if spec.split("://", 1)[0] in {"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"}:
        from components.graph.neo4j import Neo4jBackend

        user = str(options.pop("user", os.environ.get("NEO4J_USER", "neo4j")))
        password = str(options.pop("password", os.environ.get("NEO4J_PASSWORD", "")))
        return Neo4jBackend(spec, user, password, **options)  # type: ignore[arg-type]
    from components.graph.ladybug import LadybugBackend

    return LadybugBackend(spec, **options)  # type: ignore[arg-type]
