"""Graph layer: the ``<domain>/graph_snapshot`` asset and its check."""

import dagster as dg

from assets.artifacts import artifact_output, layer_asset, materialize_asset
from assets.resources import ArtifactStore
from components.graph.schema import GraphSchema
from components.graph.snapshot import GRAPH_SNAPSHOT, SourceSpec
from components.store.artifact import Artifact

__all__ = ["GROUP", "graph_snapshot_asset", "snapshot_key"]

GROUP = "graph"
SCHEMA_COLUMNS = [dg.TableColumn(c, t) for c, t in (("kind", "string"), ("name", "string"), ("pattern", "string"))]


def snapshot_key(domain: str) -> dg.AssetKey:
    return dg.AssetKey([domain, "graph_snapshot"])


def _schema_table(schema: GraphSchema) -> dg.TableMetadataValue:
    nodes = [
        {"kind": "node", "name": n.label, "pattern": f"(:{n.label})", "count": n.count} for n in schema.node_labels
    ]
    rels = [
        {
            "kind": "relationship",
            "name": r.type,
            "pattern": f"(:{t.source})-[:{r.type}]->(:{t.target})",
            "count": t.count,
        }
        for r in schema.rel_types
        for t in r.triples
    ]
    columns = [*SCHEMA_COLUMNS, dg.TableColumn("count", "int")]
    return dg.MetadataValue.table([dg.TableRecord(r) for r in nodes + rels], schema=dg.TableSchema(columns=columns))


def _metadata(art: Artifact, source: SourceSpec) -> dict:
    schema = GraphSchema.from_json(art.summary["schema"])
    out = {"backend": art.summary["backend"], "location": dg.MetadataValue.path(str(art.path))}
    out.update(nodes=schema.node_count, relationships=schema.rel_count, schema=_schema_table(schema))
    out["schema_text"] = dg.MetadataValue.md(f"```\n{schema.to_text()}\n```")
    out["source"] = dg.MetadataValue.json(source.to_json())
    return out


def graph_snapshot_asset(domain: str, source: SourceSpec, description: str = "") -> list:
    """The snapshot asset of one domain plus a blocking check that the graph is non-empty."""
    key, kinds = snapshot_key(domain), {"neo4j" if source.format == "neo4j" else "ladybug"}
    text = f"Graph snapshot of the {domain} domain. {description}".strip()

    @layer_asset(GRAPH_SNAPSHOT, key, {}, kinds, text, group=GROUP)
    def _snapshot(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.Output[Artifact]:
        art = materialize_asset(context, store, GRAPH_SNAPSHOT, {}, source)
        return artifact_output(art, _metadata(art, source))

    @dg.asset_check(
        asset=key, name="graph_non_empty", blocking=True, description="The graph has nodes and relationships."
    )
    def _non_empty(graph_snapshot: Artifact) -> dg.AssetCheckResult:
        counts = {k: int(v) for k, v in graph_snapshot.counts.items()}
        return dg.AssetCheckResult(
            passed=bool(counts.get("nodes")) and bool(counts.get("relationships")), metadata=counts
        )

    return [_snapshot, _non_empty]
