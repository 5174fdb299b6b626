"""The one artifact mechanism of the Dagster layer: how an asset declares a layer, stores its
artifact and hands it downstream.

* :func:`layer_asset` declares an asset for a :class:`~components.store.artifact.Layer`: its
  upstream artifacts as Dagster inputs (``ins``: input name → asset key — everything the builder
  reads), ``code_version`` = the layer's code digest, the artifact IO manager.
* :func:`materialize_asset` (the asset body's one call) runs
  :func:`components.store.artifact.materialize`: reuse by fingerprint, staging, atomic rename,
  catalog row.
* :func:`artifact_output` returns the artifact with the standard metadata and
  ``data_version`` = its fingerprint.
* :class:`ArtifactIOManager` loads an input by lineage: the fingerprint recorded by the upstream
  materialization of *this run* when the run materialized it, else by Dagster's latest
  materialization of that asset (an input materialized by an earlier run) — never by the
  catalog's newest row. Asset checks load the asset they check the same way, so they evaluate
  the materialization they are attached to. In a multi-process launch (docs/scale.md) every
  process takes the main process's lineage (the others run on an ephemeral instance).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import dagster as dg

from assets.resources import ArtifactStore
from components.store.artifact import Artifact, BuildContext, Layer, MissingArtifactError, materialize
from components.store.ranks import from_main

__all__ = [
    "IO_MANAGER",
    "READS",
    "ArtifactIOManager",
    "artifact_output",
    "layer_asset",
    "lineage_fingerprint",
    "materialize_asset",
    "pipeline_resources",
    "reads",
]

IO_MANAGER = "artifacts"


def _materialization(
    instance: dg.DagsterInstance, key: dg.AssetKey, run_id: str | None
) -> dg.AssetMaterialization | None:
    """The materialization of ``key`` by run ``run_id`` (the last, if several), else Dagster's
    latest materialization of it."""
    if run_id:
        mine = [
            e.asset_materialization
            for e in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
            if e.asset_materialization is not None and e.asset_materialization.asset_key == key
        ]
        if mine:
            return mine[-1]
    latest = instance.get_latest_materialization_event(key)
    return latest.asset_materialization if latest is not None else None


def lineage_fingerprint(
    instance: dg.DagsterInstance, key: dg.AssetKey, run_id: str | None
) -> tuple[str, str, str] | None:
    """``(layer, domain, fingerprint)`` of the artifact that lineage names for ``key`` in run
    ``run_id`` (see the module docstring); ``None`` when ``key`` was never materialized."""
    mat = _materialization(instance, key, run_id)
    if mat is None:
        return None
    meta = mat.metadata
    return str(meta["layer"].value), str(meta["domain"].value), str(meta["fingerprint"].value)


class ArtifactIOManager(dg.ConfigurableIOManager):
    """Artifacts are stored by the asset body (:func:`components.store.artifact.materialize`);
    this IO manager only finds them again by lineage (module docstring)."""

    store: ArtifactStore

    def handle_output(self, context: dg.OutputContext, obj: Artifact) -> None:
        if not isinstance(obj, Artifact):
            raise TypeError(
                f"{context.asset_key.to_user_string()}: an asset of this IO manager returns an Artifact, "
                f"not {type(obj).__name__}"
            )

    def load_input(self, context: dg.InputContext) -> Artifact:
        key = context.asset_key
        try:
            run_id: str | None = context.step_context.run_id
        except dg.DagsterInvariantViolationError:  # loaded outside a run (a test's build_input_context)
            run_id = None
        found = from_main(lineage_fingerprint(context.instance, key, run_id))  # the main process's instance
        if found is None:
            raise dg.Failure(f"{key.to_user_string()} has never been materialized: materialize it first")
        layer, domain, fingerprint = found
        rec = self.store.catalog().get(layer, domain, fingerprint)
        if rec is None:
            raise dg.Failure(
                str(
                    MissingArtifactError(
                        f"{key.to_user_string()} {fingerprint} (its latest materialization) is not in the store at "
                        f"{self.store.root}: materialize it again, or point GRAPHDOJO_DATA at the data root "
                        "it was made in"
                    )
                )
            )
        context.add_input_metadata({"fingerprint": fingerprint, "layer": layer})
        return Artifact.from_record(rec)


def materialize_asset(
    context: dg.AssetExecutionContext,
    store: ArtifactStore,
    layer: Layer,
    inputs: Mapping[str, Artifact],
    config: Any,
    *,
    incremental: bool = False,
) -> Artifact:
    """Reuse or build the asset's artifact (:func:`components.store.artifact.materialize`);
    ``incremental`` hands the builder the asset's own previous artifact (its latest Dagster
    materialization). A builder's ``ValueError`` (nothing to train on …) is a Dagster failure
    with its message."""
    key = context.asset_key
    previous = None
    if incremental:
        found = from_main(lineage_fingerprint(context.instance, key, None))
        rec = store.catalog().get(*found) if found else None
        previous = Artifact.from_record(rec) if rec is not None else None
    ctx = BuildContext(domain=key.path[0], data_root=store.root, log=context.log.info, previous=previous)
    try:
        return materialize(layer, inputs, config, ctx, store.catalog())
    except ValueError as exc:
        raise dg.Failure(f"{key.to_user_string()}: {exc}") from exc


def artifact_output(art: Artifact, metadata: Mapping[str, Any] | None = None) -> dg.Output[Artifact]:
    """The asset's return value: ``art`` with the standard metadata (identity, where it is,
    parents, whether it was reused, its counts) plus the layer's own ``metadata``."""
    standard: dict[str, Any] = {
        "fingerprint": art.fingerprint,
        "layer": art.layer,
        "domain": art.domain,
        "reused": art.reused,
        "parents": dg.MetadataValue.json(list(art.parents)),
    }
    if art.path is not None:
        standard["path"] = dg.MetadataValue.path(art.path)
    standard.update({k: int(v) for k, v in art.counts.items()})
    with warnings.catch_warnings():  # data_version on Output is marked beta; it is what Dagster's lineage reads
        warnings.simplefilter("ignore", dg.BetaWarning)
        return dg.Output(art, metadata={**standard, **(metadata or {})}, data_version=dg.DataVersion(art.fingerprint))


#: the input names the builders use → the asset (of the same domain) each one names
READS = {
    "snapshot": "graph_snapshot",
    "candidates": "qa_candidates",
    "certified": "certified_dataset",
    "curriculum": "curriculum_splits",
    "checkpoint": "checkpoints",
    "rft": "graphcert_rft",
    "graphcert": "graphcert_grpo",
    "stage1": "graphdancer_rl",
    "dancer_rl": "graphdancer_rl",
    "dancer_dpo": "graphdancer_dpo",
    "pairs": "preference_pairs",
    "ablations": "ablations",
    "dancer_ablations": "dancer_ablations",
    "tasks": "tasks",
    "grain": "grain_checkpoint",
}


def reads(domain: str, *names: str) -> dict[str, dg.AssetKey]:
    """Inputs ``names`` (builder input names, :data:`READS`) → their asset keys in ``domain``."""
    return {name: dg.AssetKey([domain, READS[name]]) for name in names}


def layer_asset(
    layer: Layer, key: dg.AssetKey, ins: Mapping[str, dg.AssetKey], kinds: set[str], description: str, *, group: str
) -> Callable[[Callable[..., Any]], dg.AssetsDefinition]:
    """The ``@dg.asset`` decorator of ``layer`` at ``key``: inputs, group, tags, kinds, the
    description (``{domain}`` filled in), ``code_version`` (the layer's code digest) and the
    artifact IO manager."""
    domain = key.path[0]
    return dg.asset(
        key=key,
        ins={name: dg.AssetIn(k) for name, k in ins.items()},
        group_name=group,
        code_version=layer.code_version,
        kinds=kinds,
        description=description.replace("{domain}", domain),
        tags={"layer": group, **({"domain": domain} if domain not in ("grit", "transfer") else {})},
        io_manager_key=IO_MANAGER,
    )


def pipeline_resources(data_root: str) -> dict[str, Any]:
    """The resources every asset of the pipeline needs, for a data root."""
    store = ArtifactStore(data_root=data_root)
    return {"store": store, IO_MANAGER: ArtifactIOManager(store=store)}
