"""The nightly schedule and the sensor drive real re-runs: a CSV graph, the one Definitions,
real materializations of graph → candidates → certified data on the embedded database."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import dagster as dg

from assets.resources import ArtifactStore
from components.certify.dataset import CertifyConfig
from components.graph.snapshot import SourceSpec
from components.graph.sources.demo import generate
from components.quizzer.run import QuizConfig
from components.store import Catalog
from orchestration.definitions import build_definitions
from orchestration.domains import DomainConfig
from orchestration.schedules import NIGHTLY_CRON, NIGHTLY_JOB, stale_domains
from orchestration.sensors import pipeline_job_name
from tests.conftest import write_csv_graph

FRONT = ["graph_snapshot", "qa_candidates", "certified_dataset"]


def _setup(tmp_path: Path):
    graph = generate("academic", seed=4, scale=200)
    src = tmp_path / "src"
    write_csv_graph(graph, src)
    cfg = DomainConfig(
        "lab",
        SourceSpec("csv", str(src)),
        quiz=QuizConfig(template_n=12, llm_n=0, seed=0),
        certify=CertifyConfig(fault_sample=0),
    )
    root = tmp_path / "data"
    return graph, src, {"lab": cfg}, build_definitions({"lab": cfg}, data_root=str(root)), root


def _run_requested(defs: dg.Definitions, request: dg.RunRequest, instance: dg.DagsterInstance, job_name: str):
    """Execute what a sensor / schedule asked for (the layers up to certification)."""
    asked = set(request.asset_selection or [])
    front = [dg.AssetKey(["lab", a]) for a in FRONT]
    assert not asked or set(front) <= asked
    return defs.resolve_job_def(job_name).execute_in_process(
        instance=instance, tags=request.tags, asset_selection=front
    )


def _tick_schedule(defs: dg.Definitions, root: Path):
    schedule = defs.get_schedule_def("nightly_source_check")
    ctx = dg.build_schedule_context(
        resources={"store": ArtifactStore(data_root=str(root))},
        scheduled_execution_time=dt.datetime(2026, 12, 2, 3, tzinfo=dt.timezone.utc),
    )
    return schedule.cron_schedule, schedule.evaluate_tick(ctx)


def test_nightly_schedule_requests_only_domains_whose_source_changed(tmp_path: Path) -> None:
    graph, src, domains, defs, root = _setup(tmp_path)
    cron, first = _tick_schedule(defs, root)
    assert cron == NIGHTLY_CRON
    (req,) = first.run_requests  # never materialized: stale
    assert req.tags["trigger"] == "nightly" and dg.AssetKey(["lab", "eval_reports"]) in req.asset_selection
    with dg.DagsterInstance.ephemeral() as instance:
        assert _run_requested(defs, req, instance, NIGHTLY_JOB).success
        _, quiet = _tick_schedule(defs, root)
        assert not quiet.run_requests and "matches" in quiet.skip_message
        for row in graph.nodes["Paper"].rows[:3]:
            row["title"] = row["title"] + " (revised)"
        write_csv_graph(graph, src)
        _, again = _tick_schedule(defs, root)
        (req2,) = again.run_requests
        assert req2.run_key != req.run_key and req2.tags["source_fingerprint"] != req.tags["source_fingerprint"]
    stale, errors = stale_domains(domains, ArtifactStore(data_root=str(root)))
    assert set(stale) == {"lab"} and not errors


def test_the_sensor_reruns_downstream_assets_when_the_graph_changes(tmp_path: Path) -> None:
    graph, src, _, defs, root = _setup(tmp_path)
    sensor = defs.get_sensor_def("graph_source_sensor")
    catalog = Catalog(root / "catalog.duckdb")
    with dg.DagsterInstance.ephemeral() as instance:
        ctx = {"resources": {"store": ArtifactStore(data_root=str(root))}}
        first = sensor(dg.build_sensor_context(instance=instance, **ctx))
        (req,) = first.run_requests
        assert req.job_name == pipeline_job_name("lab")
        assert _run_requested(defs, req, instance, req.job_name).success
        before = {a: catalog.latest(a, "lab").fingerprint for a in FRONT}
        assert not sensor(dg.build_sensor_context(instance=instance, cursor=first.cursor, **ctx)).run_requests
        for row in graph.nodes["Venue"].rows:
            row["name"] = row["name"] + " Review"
        write_csv_graph(graph, src)
        changed = sensor(dg.build_sensor_context(instance=instance, cursor=first.cursor, **ctx))
        (req2,) = changed.run_requests
        result = _run_requested(defs, req2, instance, req2.job_name)
        assert result.success
        materialized = {e.asset_key.path[-1] for e in result.get_asset_materialization_events()}
        assert materialized == set(FRONT)
    after = {a: catalog.latest(a, "lab") for a in FRONT}
    assert all(after[a].fingerprint != before[a] for a in FRONT)  # every layer re-ran on the new graph
    assert after["certified_dataset"].metadata["reused_from"] == before["certified_dataset"]
