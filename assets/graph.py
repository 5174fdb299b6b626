"""Graph layer: the ``<domain>/graph_snapshot`` asset and its checks."""


import dagster as dg

from assets.resources import ArtifactStore, GraphBackendResource
from components.graph.schema import GraphSchema
from components.graph.snapshot import SNAPSHOT_VERSION, SourceSpec, build_snapshot, source_fingerprint
from components.store import ArtifactRecord

__all__ = ["GROUP", "graph_snapshot_asset", "snapshot_key"]

GROUP = "graph"


def snapshot_key(domain: str) -> dg.AssetKey:
    return dg.AssetKey([domain, "graph_snapshot"])


def _schema_table(schema: "GraphSchema") -> dg.TableMetadataValue:
    rows = [
        dg.TableRecord({"kind": "node", "name": n.label, "pattern": f"(:{n.label})", "count": n.count})
        for n in schema.node_labels
    ] + [
        dg.TableRecord(
            {"kind": "relationship", "name": r.type, "pattern": f"(:{t.source})-[:{r.type}]->(:{t.target})", "count": t.count}
        )
        for r in schema.rel_types
        for t in r.triples
    ]
    return dg.MetadataValue.table(
        rows,
        schema=dg.TableSchema(
            columns=[
                dg.TableColumn("kind", "string"),
                dg.TableColumn("name", "string"),
                dg.TableColumn("pattern", "string"),
                dg.TableColumn("count", "int"),
            ]
        ),
    )


def graph_snapshot_asset(domain: str, source: SourceSpec, description: str = "") -> list:
    """The snapshot asset of one domain plus a blocking check that the graph is non-empty."""
    key = snapshot_key(domain)

    @dg.asset(
        key=key,
        group_name=GROUP,
        code_version=SNAPSHOT_VERSION,
        kinds={"ladybug" if source.format != "neo4j" else "neo4j"},
        description=f"Graph snapshot of the {domain} domain. {description}".strip(),
        tags={"domain": domain, "layer": "graph"},
    )
    def _snapshot(
        context: dg.AssetExecutionContext, store: ArtifactStore, graph: GraphBackendResource
    ) -> dg.MaterializeResult:
        source_fp = source_fingerprint(source)  # what the sensor and the nightly schedule compare
        snap = build_snapshot(domain, source, store.layer_dir("graphs", domain))
        with graph.open(snap.location) as backend:  # the stored snapshot opens read-only
            if backend.schema() != snap.schema:
                raise RuntimeError(f"stored snapshot {snap.location} does not match what was imported")
        store.catalog().record(
            ArtifactRecord(
                asset="graph_snapshot",
                domain=domain,
                fingerprint=snap.fingerprint,
                config=source.to_json(),
                row_counts=snap.counts,
                path=snap.location,
                metadata={"schema": snap.schema.to_json(), "backend": snap.backend, "parts": dict(snap.parts),
                          "source_fingerprint": source_fp},
            )
        )
        context.log.info(f"{domain}: {snap.counts} fingerprint={snap.fingerprint}")
        return dg.MaterializeResult(
            metadata={
                "fingerprint": snap.fingerprint,
                "backend": snap.backend,
                "location": dg.MetadataValue.path(snap.location),
                "nodes": snap.schema.node_count,
                "relationships": snap.schema.rel_count,
                "schema": _schema_table(snap.schema),
                "schema_text": dg.MetadataValue.md(f"```\n{snap.schema.to_text()}\n```"),
                "source": dg.MetadataValue.json(source.to_json()),
            },
            data_version=dg.DataVersion(snap.fingerprint),
        )

    @dg.asset_check(
        asset=key, name="graph_non_empty", blocking=True,
        description="The graph has nodes and relationships.",
    )
    def _non_empty(context: dg.AssetCheckExecutionContext, store: ArtifactStore) -> dg.AssetCheckResult:
        rec = store.catalog().latest("graph_snapshot", domain)
        counts = dict(rec.row_counts) if rec else {}
        return dg.AssetCheckResult(
            passed=bool(counts.get("nodes")) and bool(counts.get("relationships")),
            metadata={k: int(v) for k, v in counts.items()},
        )

    return [_snapshot, _non_empty]
