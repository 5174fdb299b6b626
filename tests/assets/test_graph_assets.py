"""In-process materialization of graph_snapshot on the real embedded backend."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from assets.artifacts import pipeline_resources
from assets.graph import graph_snapshot_asset
from components.graph.ladybug import LadybugBackend
from components.graph.snapshot import SourceSpec


def _materialize(tmp_path: Path, spec: SourceSpec):
    defs = graph_snapshot_asset("tiny", spec)
    with dg.DagsterInstance.ephemeral() as instance:
        return dg.materialize(defs, resources=pipeline_resources(str(tmp_path)), instance=instance)


def test_graph_snapshot_materializes_stores_db_and_catalog_row(tmp_path: Path) -> None:
    spec = SourceSpec("generator", "academic", {"seed": 3, "scale": 100})
    result = _materialize(tmp_path, spec)
    assert result.success
    (mat,) = result.asset_materializations_for_node("tiny__graph_snapshot") or [
        e.event_specific_data.materialization for e in result.get_asset_materialization_events()
    ]
    meta = mat.metadata
    fp = meta["fingerprint"].value
    db_dir = tmp_path / "graphs" / "tiny" / fp
    assert (db_dir / "graph.lbug").is_file()
    with LadybugBackend(db_dir) as backend:
        assert backend.fingerprint() == fp
        assert meta["nodes"].value == backend.schema().node_count > 0
    assert "-[:CITES]->" in meta["schema_text"].value
    (check,) = result.get_asset_check_evaluations()
    assert check.passed
    from components.store import Catalog

    rec = Catalog(tmp_path / "catalog.duckdb").latest("graph_snapshot", "tiny")
    assert rec is not None and rec.fingerprint == fp and rec.path == str(db_dir)
    assert rec.row_counts["relationships"] == meta["relationships"].value


def test_rematerializing_an_unchanged_source_reuses_the_snapshot(tmp_path: Path) -> None:
    spec = SourceSpec("generator", "academic", {"seed": 3, "scale": 100})
    first = _materialize(tmp_path, spec)
    second = _materialize(tmp_path, spec)
    fps = [
        e.event_specific_data.materialization.metadata["fingerprint"].value
        for r in (first, second)
        for e in r.get_asset_materialization_events()
    ]
    assert fps[0] == fps[1]
    assert [p.name for p in (tmp_path / "graphs" / "tiny").iterdir()] == [fps[0]]
