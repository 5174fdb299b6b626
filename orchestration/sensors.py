"""Sensors: re-run a domain's pipeline when its graph source changes."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from assets.resources import ArtifactStore
from components.graph.errors import GraphError
from components.graph.snapshot import source_fingerprint
from orchestration.domains import DomainConfig

__all__ = [
    "automation_running",
    "build_source_sensor",
    "pipeline_job_name",
    "recorded_source_fingerprints",
    "source_changes",
]


def pipeline_job_name(domain: str) -> str:
    return f"{domain}_pipeline"


def source_changes(
    domains: Mapping[str, DomainConfig], cursor: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Pure part of the sensor: ``(changed, new_cursor, errors)``.

    ``changed`` maps each domain whose source fingerprint differs from the cursor (or is new)
    to its fingerprint; a domain whose source cannot be read keeps its cursor entry and is
    reported in ``errors`` instead of failing the whole tick.
    """
    changed: dict[str, str] = {}
    errors: dict[str, str] = {}
    new_cursor = dict(cursor)
    for name, cfg in domains.items():
        try:
            fp = source_fingerprint(cfg.source)
        except (GraphError, OSError) as exc:
            errors[name] = str(exc)
            continue
        if cursor.get(name) != fp:
            changed[name] = fp
            new_cursor[name] = fp
    return changed, new_cursor, errors


def automation_running() -> bool:
    """Whether the sensor and the nightly schedule start switched on (``GRAPHDOJO_AUTOMATION``:
    ``on``, the default, or ``off`` — they can still be switched on in the UI)."""
    value = os.environ.get("GRAPHDOJO_AUTOMATION", "on").lower()
    if value not in ("on", "off"):
        raise ValueError(f"GRAPHDOJO_AUTOMATION={value!r}: on or off")
    return value == "on"


def recorded_source_fingerprints(store: Any, names: Sequence[str]) -> dict[str, str]:
    """Each domain's source fingerprint as recorded by its latest ``graph_snapshot``
    materialization (domains never materialized are absent)."""
    catalog = store.catalog()
    out = {}
    for name in names:
        rec = catalog.latest("graph_snapshot", name)
        if rec is not None and rec.metadata.get("source_fingerprint"):
            out[name] = str(rec.metadata["source_fingerprint"])
    return out


def build_source_sensor(
    domains: Mapping[str, DomainConfig], jobs: Sequence[dg.UnresolvedAssetJobDefinition], interval_s: int = 60
) -> dg.SensorDefinition:
    """One sensor over all domains. The cursor (JSON) maps domain -> last seen source
    fingerprint — seeded, for a domain it has not seen yet, from the catalog's latest snapshot, so
    a first tick does not re-run what is already materialized; a changed or never-materialized
    source requests ``<domain>_pipeline`` with run key ``<domain>:<fingerprint>``, so the same
    content never runs twice."""
    status = dg.DefaultSensorStatus.RUNNING if automation_running() else dg.DefaultSensorStatus.STOPPED

    @dg.sensor(
        name="graph_source_sensor",
        jobs=list(jobs),
        minimum_interval_seconds=interval_s,
        default_status=status,
        description="Requests a domain's pipeline when its graph source fingerprint changes.",
    )
    def graph_source_sensor(context: dg.SensorEvaluationContext, store: ArtifactStore) -> dg.SensorResult:
        cursor = json.loads(context.cursor) if context.cursor else {}
        unseen = [name for name in domains if name not in cursor]
        cursor = {**recorded_source_fingerprints(store, unseen), **cursor}
        changed, new_cursor, errors = source_changes(domains, cursor)
        for name, message in errors.items():
            context.log.warning(f"cannot fingerprint source of {name}: {message}")
        requests = [
            dg.RunRequest(
                run_key=f"{name}:{fp}",
                job_name=pipeline_job_name(name),
                tags={"domain": name, "source_fingerprint": fp},
            )
            for name, fp in sorted(changed.items())
        ]
        skip = None if requests else "no source changed"
        return dg.SensorResult(run_requests=requests, cursor=json.dumps(new_cursor, sort_keys=True), skip_reason=skip)

    return graph_source_sensor
