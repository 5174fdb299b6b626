"""The one Dagster ``Definitions``: every domain's assets, jobs, sensors and resources."""

from __future__ import annotations

import os

import dagster as dg

from assets.artifacts import pipeline_resources
from assets.certification import certified_dataset_asset
from assets.evaluation import TRANSFER_PREFIX, eval_reports_asset, grit_eval_asset, transfer_matrix_asset
from assets.generation import GRIT_PREFIX, grit_tasks_asset, qa_candidates_asset
from assets.graph import graph_snapshot_asset
from assets.training import (
    ablations_asset,
    checkpoints_asset,
    curriculum_splits_asset,
    dancer_ablations_asset,
    grain_checkpoint_asset,
    preference_pairs_asset,
    rl_stage_assets,
)
from components.store import data_root as default_data_root
from orchestration.domains import DomainConfig, default_domain, load_domains
from orchestration.schedules import build_nightly_schedule
from orchestration.sensors import build_source_sensor, pipeline_job_name

__all__ = ["build_definitions", "defs"]


def domain_assets(cfg: DomainConfig) -> list:
    """Every asset (and check) of one domain, in layer order."""
    return [
        *graph_snapshot_asset(cfg.name, cfg.source, cfg.description),
        *qa_candidates_asset(cfg.name, cfg.quiz),
        *certified_dataset_asset(cfg.name, cfg.certify),
        *curriculum_splits_asset(cfg.name, cfg.curriculum),
        *checkpoints_asset(cfg.name, cfg.train),
        *rl_stage_assets(cfg.name, cfg.train),
        *ablations_asset(cfg.name, cfg.train, cfg.ablations),
        *dancer_ablations_asset(cfg.name, cfg.train),
        *preference_pairs_asset(cfg.name, cfg.train),
        *eval_reports_asset(cfg.name, cfg.train, cfg.evaluate),
    ]


def grit_assets(cfg: DomainConfig) -> list:
    """The domain-independent GRIT-style tasks, the GRAIN checkpoint and its evaluation (with the
    default domain's training preset and evaluation settings)."""
    return [*grit_tasks_asset(cfg.grit), *grain_checkpoint_asset(cfg.train), *grit_eval_asset(cfg.train, cfg.evaluate)]


EXECUTORS = ("in_process", "multiprocess", "k8s")


def executor_from_env() -> dg.ExecutorDefinition:
    """``GRAPHDOJO_EXECUTOR``: ``in_process`` (default: one process, what the demo and tests
    use), ``multiprocess`` (one process per asset on this machine) or ``k8s`` (one Kubernetes Job
    per asset, dagster-k8s; run config in orchestration/scale/dagster/, see docs/scale.md)."""
    name = os.environ.get("GRAPHDOJO_EXECUTOR", "in_process")
    if name == "in_process":
        return dg.in_process_executor
    if name == "multiprocess":
        return dg.multiprocess_executor
    if name == "k8s":
        try:
            from dagster_k8s import k8s_job_executor
        except ImportError as exc:
            raise RuntimeError("GRAPHDOJO_EXECUTOR=k8s needs dagster-k8s: pip install -e '.[scale]'") from exc
        return k8s_job_executor
    raise ValueError(f"GRAPHDOJO_EXECUTOR={name!r}; known: {', '.join(EXECUTORS)}")


def build_definitions(domains: dict[str, DomainConfig] | None = None, data_root: str | None = None) -> dg.Definitions:
    domains = load_domains() if domains is None else domains
    assets = [a for cfg in domains.values() for a in domain_assets(cfg)]
    default = domains[default_domain(domains)]
    assets += grit_assets(default)
    if len(domains) > 1:
        assets += transfer_matrix_asset(list(domains), default.evaluate)
    jobs = [
        dg.define_asset_job(
            pipeline_job_name(name),
            selection=dg.AssetSelection.key_prefixes([name]),
            description=f"Materialize every asset of the {name} domain.",
            tags={"domain": name},
        )
        for name in domains
    ]
    jobs.append(
        dg.define_asset_job(
            pipeline_job_name(GRIT_PREFIX),
            selection=dg.AssetSelection.key_prefixes([GRIT_PREFIX]),
            description="Materialize the GRIT-style tasks, the GRAIN checkpoint and its evaluation.",
            tags={"domain": GRIT_PREFIX},
        )
    )
    if len(domains) > 1:
        jobs.append(
            dg.define_asset_job(
                pipeline_job_name(TRANSFER_PREFIX),
                selection=dg.AssetSelection.key_prefixes([TRANSFER_PREFIX]),
                description="Materialize the train-domain × test-domain transfer matrix.",
                tags={"domain": TRANSFER_PREFIX},
            )
        )
    root = data_root or str(default_data_root())
    return dg.Definitions(
        # AssetChecksDefinition subclasses AssetsDefinition: test for checks first.
        assets=[a for a in assets if not isinstance(a, dg.AssetChecksDefinition)],
        asset_checks=[a for a in assets if isinstance(a, dg.AssetChecksDefinition)],
        jobs=jobs,
        sensors=[build_source_sensor(domains, jobs)],
        schedules=[
            build_nightly_schedule(
                domains,
                {
                    name: [
                        k
                        for a in assets
                        if not isinstance(a, dg.AssetChecksDefinition)
                        for k in a.keys
                        if k.path[0] == name
                    ]
                    for name in domains
                },
            )
        ],
        resources=pipeline_resources(root),
        executor=executor_from_env(),
        metadata={"default_domain": default_domain(domains)},
    )


defs = build_definitions()
