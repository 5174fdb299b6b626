"""The snapshot sensor requests a domain's pipeline exactly when its source changes."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import dagster as dg
import pytest

from assets.resources import ArtifactStore
from components.graph.snapshot import SourceSpec, source_fingerprint
from components.store import ArtifactRecord, Catalog
from orchestration.domains import DomainConfig
from orchestration.sensors import build_source_sensor, pipeline_job_name

SCRIPT = """
CREATE (a:Person {id: 'a', name: 'Ann'}), (b:Person {id: 'b', name: 'Bob'})
CREATE (a)-[:KNOWS {since: 2001}]->(b)
"""


def _sensor(tmp_path: Path):
    script = tmp_path / "people.cypher"
    script.write_text(SCRIPT)
    domains = {
        "people": DomainConfig("people", SourceSpec("cypher-script", str(script))),
        "gen": DomainConfig("gen", SourceSpec("generator", "academic", {"seed": 0, "scale": 100})),
    }
    jobs = [dg.define_asset_job(pipeline_job_name(d), selection=dg.AssetSelection.key_prefixes([d])) for d in domains]
    return script, build_source_sensor(domains, jobs)


def _tick(sensor, cursor: str | None, data: Path | None = None):
    store = ArtifactStore(data_root=str(data or tempfile.mkdtemp(prefix="sensor-data-")))  # empty catalog
    with dg.DagsterInstance.ephemeral() as instance:
        ctx = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"store": store})
        result = sensor(ctx)
    return result


def test_first_tick_requests_every_domain_then_nothing(tmp_path: Path) -> None:
    _, sensor = _sensor(tmp_path)
    first = _tick(sensor, None)
    assert sorted(r.job_name for r in first.run_requests) == ["gen_pipeline", "people_pipeline"]
    second = _tick(sensor, first.cursor)
    assert second.run_requests == [] and second.skip_reason is not None
    assert second.cursor == first.cursor


def test_changed_source_requests_only_that_domain(tmp_path: Path) -> None:
    script, sensor = _sensor(tmp_path)
    first = _tick(sensor, None)
    script.write_text(SCRIPT.replace("2001", "2002"))
    changed = _tick(sensor, first.cursor)
    assert [r.job_name for r in changed.run_requests] == ["people_pipeline"]
    (req,) = changed.run_requests
    assert req.run_key == f"people:{json.loads(changed.cursor)['people']}"
    assert json.loads(changed.cursor)["gen"] == json.loads(first.cursor)["gen"]


def test_unreadable_source_is_reported_not_fatal(tmp_path: Path) -> None:
    script, sensor = _sensor(tmp_path)
    first = _tick(sensor, None)
    script.unlink()
    result = _tick(sensor, first.cursor)
    assert result.run_requests == []
    assert json.loads(result.cursor)["people"] == json.loads(first.cursor)["people"]


def test_first_tick_skips_a_domain_already_materialized_from_the_same_source(tmp_path: Path) -> None:
    script, sensor = _sensor(tmp_path)
    data = tmp_path / "data"
    spec = SourceSpec("cypher-script", str(script))
    Catalog(data / "catalog.duckdb").record(
        ArtifactRecord("graph_snapshot", "people", "f1", metadata={"source_fingerprint": source_fingerprint(spec)})
    )
    first = _tick(sensor, None, data)
    assert [r.job_name for r in first.run_requests] == ["gen_pipeline"]  # people is up to date
    script.write_text(SCRIPT.replace("Bob", "Rob"))
    assert [r.job_name for r in _tick(sensor, first.cursor, data).run_requests] == ["people_pipeline"]


def test_automation_can_start_switched_off(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GRAPHDOJO_AUTOMATION", "off")
    _, sensor = _sensor(tmp_path)
    assert sensor.default_status == dg.DefaultSensorStatus.STOPPED
    monkeypatch.setenv("GRAPHDOJO_AUTOMATION", "maybe")
    with pytest.raises(ValueError, match="on or off"):
        _sensor(tmp_path)
