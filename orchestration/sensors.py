"""Sensors: re-run a domain's pipeline when its graph source changes."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import dagster as dg

from components.graph.errors import GraphError
from components.graph.snapshot import source_fingerprint
from orchestration.domains import DomainConfig

__all__ = ["build_source_sensor", "pipeline_job_name", "source_changes"]


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


def build_source_sensor(
    domains: Mapping[str, DomainConfig], jobs: Sequence[dg.UnresolvedAssetJobDefinition], interval_s: int = 60
) -> dg.SensorDefinition:
    """One sensor over all domains. The cursor (JSON) maps domain -> last seen source
    fingerprint; a changed or first-seen fingerprint requests ``<domain>_pipeline`` with run key
    ``<domain>:<fingerprint>``, so the same content never runs twice."""

    @dg.sensor(
        name="graph_source_sensor",
        jobs=list(jobs),
        minimum_interval_seconds=interval_s,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Requests a domain's pipeline when its graph source fingerprint changes.",
    )
    def graph_source_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        cursor = json.loads(context.cursor) if context.cursor else {}
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
        return dg.SensorResult(
            run_requests=requests, cursor=json.dumps(new_cursor, sort_keys=True), skip_reason=skip
        )

    return graph_source_sensor
