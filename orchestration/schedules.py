"""Schedules: re-check every domain's graph source nightly.

The sensor (:mod:`orchestration.sensors`) reacts within a minute while the daemon runs; the
nightly schedule is the safety net for everything it cannot see — the daemon was down, the
sensor was switched off, or a source changed and changed back between ticks. It compares each
domain's source fingerprint with the one recorded by the latest ``graph_snapshot``
materialization in the catalog and requests ``<domain>_pipeline`` for each domain that differs
(or was never materialized), as a run of ``nightly_refresh`` that selects that domain's
assets. Unchanged domains are skipped; the re-run of a changed one reuses
every artifact whose inputs did not change and re-certifies incrementally.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import dagster as dg

from assets.resources import ArtifactStore
from orchestration.domains import DomainConfig
from orchestration.sensors import automation_running, recorded_source_fingerprints, source_changes

__all__ = ["NIGHTLY_CRON", "NIGHTLY_JOB", "build_nightly_schedule", "stale_domains"]

NIGHTLY_CRON = "0 3 * * *"
NIGHTLY_JOB = "nightly_refresh"


def stale_domains(domains: Mapping[str, DomainConfig], store: ArtifactStore) -> tuple[dict[str, str], dict[str, str]]:
    """``(stale, errors)``: domains whose source fingerprint differs from the latest recorded
    snapshot's (→ the new fingerprint), and domains whose source cannot be read (→ why)."""
    changed, _, errors = source_changes(domains, recorded_source_fingerprints(store, list(domains)))
    return changed, errors


def build_nightly_schedule(
    domains: Mapping[str, DomainConfig], domain_keys: Mapping[str, Sequence[dg.AssetKey]], cron: str = NIGHTLY_CRON
) -> dg.ScheduleDefinition:
    """The schedule and its job (``nightly_refresh``: every domain's assets); each request
    selects the assets of one stale domain (``domain_keys``)."""
    job = dg.define_asset_job(
        NIGHTLY_JOB,
        selection=dg.AssetSelection.key_prefixes(*([d] for d in domains)),
        description="What the nightly schedule runs: the pipelines of domains whose source changed.",
    )

    @dg.schedule(
        name="nightly_source_check",
        cron_schedule=cron,
        execution_timezone="UTC",
        job=job,
        default_status=dg.DefaultScheduleStatus.RUNNING if automation_running() else dg.DefaultScheduleStatus.STOPPED,
        description="Nightly: re-runs the pipeline of every domain whose graph source changed since its last snapshot.",
    )
    def nightly_source_check(context: dg.ScheduleEvaluationContext, store: ArtifactStore):
        stale, errors = stale_domains(domains, store)
        for name, message in errors.items():
            context.log.warning(f"cannot fingerprint source of {name}: {message}")
        if not stale:
            return dg.SkipReason("every source matches its latest snapshot")
        day = context.scheduled_execution_time.strftime("%Y-%m-%d") if context.scheduled_execution_time else "manual"
        return [
            dg.RunRequest(
                run_key=f"nightly:{name}:{fp}:{day}",
                asset_selection=list(domain_keys[name]),
                tags={"domain": name, "source_fingerprint": fp, "trigger": "nightly"},
            )
            for name, fp in sorted(stale.items())
        ]

    return nightly_source_check
