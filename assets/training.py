"""Training layer: ``<domain>/curriculum_splits`` (levels and entity-grouped splits of the
certified items) and its check; ``<domain>/checkpoints`` (the warm-start checkpoint)."""

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from assets.certification import certified_dataset_key
from assets.metadata import counts_table, records_table
from assets.resources import ArtifactStore
from components.certify.dataset import read_certified
from components.curriculum import build_curriculum, curriculum_summary, training_items
from components.graph.schema import GraphSchema
from components.store import ArtifactRecord
from components.store.fingerprint import chain_fingerprint, code_digest, read_parquet, write_parquet
from components.training.checkpoint import CURVE_KEYS, CheckpointResult, TrainConfig, train_checkpoint

__all__ = ["ABLATIONS", "DANCER_DPO", "ablations_asset", "DANCER_RL", "GRAPHCERT", "GROUP", "checkpoints_asset", "checkpoints_key",
           "curriculum_splits_asset", "curriculum_splits_key", "grain_checkpoint_asset", "preference_pairs_asset",
           "preference_pairs_key", "rl_stage_assets", "stage_key"]

GROUP = "training"
ASSET = "curriculum_splits"
VERSION = "curriculum-1"


def curriculum_splits_key(domain: str) -> dg.AssetKey:
    return dg.AssetKey([domain, ASSET])


def curriculum_splits_asset(domain: str, seed: int = 0) -> list:
    key = curriculum_splits_key(domain)

    @dg.asset(
        key=key,
        deps=[certified_dataset_key(domain)],
        group_name=GROUP,
        code_version=VERSION,
        kinds={"parquet"},
        description=f"Curriculum levels (Easy / Medium / Hard) and entity-grouped train / validation / test splits of {domain}'s admitted items.",
        tags={"domain": domain, "layer": "training"},
    )
    def _curriculum(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        import components.curriculum as curriculum_pkg

        catalog = store.catalog()
        cert = catalog.latest("certified_dataset", domain)
        snap = catalog.latest("graph_snapshot", domain)
        if cert is None or not cert.path or snap is None:
            raise dg.Failure(f"materialize {domain}/certified_dataset first")
        schema = GraphSchema.from_json(snap.metadata["schema"])
        fingerprint = chain_fingerprint([cert.fingerprint], f"{VERSION}:{code_digest(curriculum_pkg.__path__[0])}", {"seed": seed})
        items = build_curriculum(read_certified(cert.path), schema, seed=seed)
        out = store.layer_dir(ASSET, domain) / fingerprint / "curriculum.parquet"
        with store.staged(ASSET, domain, fingerprint) as tmp:
            write_parquet(items, tmp / out.name)
        summary = curriculum_summary(items)
        catalog.record(ArtifactRecord(asset=ASSET, domain=domain, fingerprint=fingerprint, parents=[cert.fingerprint],
                                      config={"seed": seed}, row_counts={"items": len(items)}, path=str(out),
                                      metadata=summary))
        sampler = [{"stage point": k, **{lv: round(v, 3) for lv, v in p.items()}} for k, p in summary["sampler"].items()]
        return dg.MaterializeResult(
            metadata={
                "fingerprint": fingerprint,
                "path": dg.MetadataValue.path(str(out)),
                "items": len(items),
                "by_level_split": counts_table(summary["by_level_split"], "level/split"),
                "crossing_entities": len(summary["crossing_entities"]),
                "sampler_p": records_table(sampler, [("stage point", "string"), ("easy", "float"),
                                                     ("medium", "float"), ("hard", "float")]),
            },
            data_version=dg.DataVersion(fingerprint),
        )

    @dg.asset_check(asset=key, name="no_entity_crosses_splits", blocking=True,
                    description="No grounded entity appears in two splits, and there is training data.")
    def _no_crossing(store: ArtifactStore) -> dg.AssetCheckResult:
        rec = store.catalog().latest(ASSET, domain)
        meta = rec.metadata if rec else {}
        crossing = meta.get("crossing_entities", ["<not materialized>"])
        train = sum(v for k, v in (meta.get("by_level_split") or {}).items() if k.endswith("/train"))
        return dg.AssetCheckResult(passed=not crossing and train > 0,
                                   metadata={"crossing": len(crossing), "train_items": train,
                                             "examples": dg.MetadataValue.json(crossing[:10])})

    return [_curriculum, _no_crossing]


CHECKPOINT = "checkpoints"
CHECKPOINT_VERSION = "checkpoint-1"


def checkpoints_key(domain: str) -> dg.AssetKey:
    return dg.AssetKey([domain, CHECKPOINT])


def _curve(values: Sequence[float], width: int = 40) -> str:
    """A per-step curve as a Markdown text chart (one bar per logged step, scaled to the largest
    magnitude)."""
    if not values:
        return "(no steps logged)"
    hi = max(abs(v) for v in values) or 1.0
    lines = ["```text"] + [f"step {i + 1:>3} {'█' * max(1, round(width * abs(v) / hi))} {v:.4f}" for i, v in enumerate(values)]
    return "\n".join(lines + ["```"])


def _train_or_reuse(context: dg.AssetExecutionContext, store: ArtifactStore, asset: str, domain: str, fingerprint: str,
                    parents: list[str], config: dict[str, Any], train: Callable[[Path], CheckpointResult]) -> tuple[Path, dict[str, Any]]:
    """The checkpoint folder of ``fingerprint`` and its catalog metadata: reused when it exists,
    else trained by ``train(folder)`` (a ``ValueError`` becomes a clear Dagster failure)."""
    catalog = store.catalog()
    folder = store.layer_dir(asset, domain) / fingerprint
    previous = catalog.get(asset, domain, fingerprint)
    if previous is not None and (folder / "README.md").is_file():
        context.log.info(f"reusing {asset} {fingerprint}")
        return folder, dict(previous.metadata)
    try:
        with store.staged(asset, domain, fingerprint) as tmp:
            result = train(tmp)
    except ValueError as exc:
        raise dg.Failure(f"{domain}/{asset}: {exc}") from exc
    meta = {"losses": result.losses, "examples": result.examples, "dropped": len(result.dropped),
            "base_model": result.base_model, "wall_s": result.wall_s, "config": result.config,
            "method": result.method, "curves": result.curves}
    catalog.record(ArtifactRecord(asset=asset, domain=domain, fingerprint=fingerprint, parents=parents, config=config,
                                  row_counts={"examples": result.examples}, path=str(folder), metadata=meta))
    return folder, meta


def checkpoint_metadata(fingerprint: str, folder: Path, preset: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    """Dagster metadata of a checkpoint: identity, losses, the per-step curves (table, text charts,
    PNG) and the model card."""
    losses, curves = meta["losses"], meta.get("curves") or []
    out: dict[str, Any] = {
        "fingerprint": fingerprint,
        "path": dg.MetadataValue.path(str(folder)),
        "preset": preset,
        "base_model": meta["base_model"],
        "method": meta.get("method", "sft-warm-start"),
        "examples": meta["examples"],
        "dropped": meta["dropped"],
        "first_loss": float(losses[0]) if losses else 0.0,
        "last_loss": float(losses[-1]) if losses else 0.0,
        "wall_s": float(meta["wall_s"]),
        "model_card": dg.MetadataValue.md((folder / "README.md").read_text()),
    }
    if curves:
        out["curves"] = records_table(curves, [("step", "int"), ("loss", "float"), ("reward", "float"), ("kl", "float"),
                                               ("tool_call_rate", "float"), ("margin", "float")])
    for key in CURVE_KEYS:
        values = [float(c[key]) for c in curves if c.get(key) is not None]
        if values:
            out[f"{key}_curve"] = dg.MetadataValue.md(_curve(values))
            out[f"last_{key}"] = values[-1]
    if (folder / "curves.png").is_file():
        out["curves_png"] = dg.MetadataValue.path(str(folder / "curves.png"))
    return out


def checkpoints_asset(domain: str, train: TrainConfig) -> list:
    key = checkpoints_key(domain)

    @dg.asset(
        key=key,
        deps=[curriculum_splits_key(domain)],
        group_name=GROUP,
        code_version=CHECKPOINT_VERSION,
        kinds={"pytorch"},
        description=(f"The {domain} warm-start checkpoint ({train.preset}): SFT on teacher trajectories of the "
                     "training split, environment tokens masked; a Hugging Face folder with a model card."),
        tags={"domain": domain, "layer": "training"},
    )
    def _checkpoint(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        import components.training as training_pkg

        catalog = store.catalog()
        curr = catalog.latest(ASSET, domain)
        cert = catalog.latest("certified_dataset", domain)
        snap = catalog.latest("graph_snapshot", domain)
        if curr is None or cert is None or snap is None:
            raise dg.Failure(f"materialize {domain}/curriculum_splits first")
        train_ids = {r["id"] for r in training_items(read_parquet(curr.path))}
        rows = [r for r in read_certified(cert.path) if r["id"] in train_ids]
        fingerprint = chain_fingerprint([curr.fingerprint], f"{CHECKPOINT_VERSION}:{code_digest(training_pkg.__path__[0])}",
                                        train.resolved())
        folder, meta = _train_or_reuse(
            context, store, CHECKPOINT, domain, fingerprint, [curr.fingerprint], train.resolved(),
            lambda out: train_checkpoint(rows, snap.path, train, out, data_fingerprint=curr.fingerprint, domain=domain,
                                         cache_root=store.root))
        return dg.MaterializeResult(metadata=checkpoint_metadata(fingerprint, folder, train.preset, meta),
                                    data_version=dg.DataVersion(fingerprint))

    return [_checkpoint]


PAIRS = "preference_pairs"
PAIRS_VERSION = "pairs-1"


def preference_pairs_key(domain: str) -> dg.AssetKey:
    return dg.AssetKey([domain, PAIRS])


def preference_pairs_asset(domain: str, train: TrainConfig) -> list:
    key = preference_pairs_key(domain)

    @dg.asset(
        key=key,
        deps=[stage_key(domain, DANCER_RL)],
        group_name=GROUP,
        code_version=PAIRS_VERSION,
        kinds={"parquet"},
        description=(f"GraphDancer preference pairs for {domain}: M = 8 trajectories per training question from the "
                     "stage-1 (RL) checkpoint, ranked by (EM, EH, VF, -L, -I, -N), best vs worst; uniform pools dropped."),
        tags={"domain": domain, "layer": "training"},
    )
    def _pairs(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        import components.training as training_pkg
        from components.training.preferences import PreferenceConfig, sample_preference_pairs

        catalog = store.catalog()
        ckpt, curr, snap = (catalog.latest(a, domain) for a in (DANCER_RL, ASSET, "graph_snapshot"))
        if ckpt is None or curr is None or snap is None:
            raise dg.Failure(f"materialize {domain}/{DANCER_RL} first")
        train_rows = training_items(read_parquet(curr.path))
        resolved = train.resolved()
        config = PreferenceConfig(max_questions=resolved["pair_questions"], max_new_tokens=resolved["pair_new_tokens"],
                                  seed=train.seed, threads=train.threads)
        fingerprint = chain_fingerprint([ckpt.fingerprint, curr.fingerprint],
                                        f"{PAIRS_VERSION}:{code_digest(training_pkg.__path__[0])}", vars(config))
        out = store.layer_dir(PAIRS, domain) / fingerprint / "pairs.parquet"
        previous = catalog.get(PAIRS, domain, fingerprint)
        if previous is not None and out.is_file():
            report = dict(previous.metadata)
        else:
            pairs, report = sample_preference_pairs(ckpt.path, train_rows, snap.path, config)
            with store.staged(PAIRS, domain, fingerprint) as tmp:
                write_parquet(pairs, tmp / out.name)
            catalog.record(ArtifactRecord(asset=PAIRS, domain=domain, fingerprint=fingerprint,
                                          parents=[ckpt.fingerprint, curr.fingerprint], config=vars(config),
                                          row_counts={"pairs": report["pairs"]}, path=str(out), metadata=report))
        return dg.MaterializeResult(
            metadata={
                "fingerprint": fingerprint,
                "path": dg.MetadataValue.path(str(out)),
                "questions": report["questions"],
                "trajectories": report["trajectories"],
                "pairs": report["pairs"],
                "dropped": counts_table(report["dropped"] or {"none": 0}, "reason"),
                "answered_rate": float(report["answered_rate"]),
                "valid_format_rate": float(report["valid_format_rate"]),
                "mean_rounds": float(report["mean_rounds"]),
            },
            data_version=dg.DataVersion(fingerprint),
        )

    return [_pairs]


GRAPHCERT, DANCER_RL, DANCER_DPO = "graphcert_grpo", "graphdancer_rl", "graphdancer_dpo"
STAGE_VERSION = "stage-1"


def stage_key(domain: str, stage: str) -> dg.AssetKey:
    return dg.AssetKey([domain, stage])


def _stage_inputs(store: ArtifactStore, domain: str, needs: Sequence[str]) -> dict[str, Any]:
    catalog = store.catalog()
    records = {a: catalog.latest(a, domain) for a in needs}
    missing = [a for a, r in records.items() if r is None or not r.path]
    if missing:
        raise dg.Failure(f"materialize {', '.join(f'{domain}/{a}' for a in missing)} first")
    return records


def _stage_fingerprint(parents: Sequence[Any], stage: str, train: TrainConfig) -> str:
    import components.training as training_pkg

    return chain_fingerprint([p.fingerprint for p in parents],
                             f"{STAGE_VERSION}:{stage}:{code_digest(training_pkg.__path__[0])}", train.resolved())


def _certified_train_rows(cert: Any, curr: Any) -> list[dict[str, Any]]:
    train_ids = {r["id"] for r in training_items(read_parquet(curr.path))}
    return [r for r in read_certified(cert.path) if r["id"] in train_ids]


def rl_stage_assets(domain: str, train: TrainConfig) -> list:
    """``<domain>/graphcert_grpo`` and ``<domain>/graphdancer_rl`` (both from the warm start) and
    ``<domain>/graphdancer_dpo`` (from stage 1, on the preference pairs)."""
    from components.training import stages

    common = dict(group_name=GROUP, code_version=STAGE_VERSION, kinds={"pytorch"},
                  tags={"domain": domain, "layer": "training"})

    @dg.asset(key=stage_key(domain, GRAPHCERT), deps=[checkpoints_key(domain)],
              description=f"{domain}: GraphCert GRPO from the warm start — {stages.METHODS['graphcert-grpo']}", **common)
    def _graphcert(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        rec = _stage_inputs(store, domain, [CHECKPOINT, ASSET, "certified_dataset", "graph_snapshot"])
        ckpt, curr, snap = rec[CHECKPOINT], rec[ASSET], rec["graph_snapshot"]
        rows = _certified_train_rows(rec["certified_dataset"], curr)
        fingerprint = _stage_fingerprint([ckpt, curr], GRAPHCERT, train)
        folder, meta = _train_or_reuse(
            context, store, GRAPHCERT, domain, fingerprint, [ckpt.fingerprint, curr.fingerprint], train.resolved(),
            lambda out: stages.graphcert_grpo(ckpt.path, rows, snap.path, train, out, data_fingerprint=curr.fingerprint,
                                              domain=domain))
        return dg.MaterializeResult(metadata=checkpoint_metadata(fingerprint, folder, train.preset, meta),
                                    data_version=dg.DataVersion(fingerprint))

    @dg.asset(key=stage_key(domain, DANCER_RL), deps=[checkpoints_key(domain)],
              description=f"{domain}: GraphDancer stage 1 — {stages.METHODS['graphdancer-rl']}", **common)
    def _dancer_rl(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        rec = _stage_inputs(store, domain, [CHECKPOINT, ASSET, "graph_snapshot"])
        ckpt, curr, snap = rec[CHECKPOINT], rec[ASSET], rec["graph_snapshot"]
        items = training_items(read_parquet(curr.path))
        fingerprint = _stage_fingerprint([ckpt, curr], DANCER_RL, train)
        folder, meta = _train_or_reuse(
            context, store, DANCER_RL, domain, fingerprint, [ckpt.fingerprint, curr.fingerprint], train.resolved(),
            lambda out: stages.graphdancer_rl(ckpt.path, items, snap.path, train, out, data_fingerprint=curr.fingerprint,
                                              domain=domain))
        return dg.MaterializeResult(metadata=checkpoint_metadata(fingerprint, folder, train.preset, meta),
                                    data_version=dg.DataVersion(fingerprint))

    @dg.asset(key=stage_key(domain, DANCER_DPO), deps=[preference_pairs_key(domain)],
              description=(f"{domain}: GraphDancer stage 2 — {stages.METHODS['graphdancer-dpo']} When the sampled "
                           "pools gave no pair, nothing is trained: the materialization says trained = false and why."),
              **common)
    def _dancer_dpo(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        rec = _stage_inputs(store, domain, [DANCER_RL, PAIRS, ASSET])
        stage1, pairs_rec, curr = rec[DANCER_RL], rec[PAIRS], rec[ASSET]
        pairs = read_parquet(pairs_rec.path)
        if not pairs:
            reason = (f"0 preference pairs ({pairs_rec.metadata.get('dropped')}): the stage-1 policy's sampled pools "
                      "were uniform, so there is nothing to prefer")
            context.log.warning(f"{domain}/{DANCER_DPO} not trained: {reason}")
            store.layer_dir(DANCER_DPO, domain)  # the layer folder exists either way (a dvc.yaml output)
            return dg.MaterializeResult(metadata={"trained": False, "reason": reason, "pairs": 0},
                                        data_version=dg.DataVersion(f"untrained-{pairs_rec.fingerprint}"))
        levels = {str(r["id"]): r["level"] for r in read_parquet(curr.path)}
        fingerprint = _stage_fingerprint([stage1, pairs_rec], DANCER_DPO, train)
        folder, meta = _train_or_reuse(
            context, store, DANCER_DPO, domain, fingerprint, [stage1.fingerprint, pairs_rec.fingerprint],
            train.resolved(),
            lambda out: stages.graphdancer_dpo(stage1.path, pairs, levels, train, out,
                                               data_fingerprint=pairs_rec.fingerprint, domain=domain))
        return dg.MaterializeResult(metadata={"trained": True, "pairs": len(pairs),
                                              **checkpoint_metadata(fingerprint, folder, train.preset, meta)},
                                    data_version=dg.DataVersion(fingerprint))

    return [_graphcert, _dancer_rl, _dancer_dpo]


GRAIN = "grain_checkpoint"


def grain_checkpoint_asset(train: TrainConfig) -> list:
    """``grit/grain_checkpoint``: GRAIN (SFT then GRPO) on the GRIT-style tasks."""
    from assets.generation import GRIT_PREFIX, grit_tasks_key
    from components.evaluation.grit import from_row
    from components.training import stages

    @dg.asset(key=dg.AssetKey([GRIT_PREFIX, GRAIN]), deps=[grit_tasks_key()], group_name=GROUP,
              code_version=STAGE_VERSION, kinds={"pytorch"}, tags={"layer": "training"},
              description=f"GRAIN ({train.preset}) — {stages.METHODS['grain']}")
    def _grain(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        tasks = store.catalog().latest("grit_tasks", GRIT_PREFIX)
        if tasks is None or not tasks.path:
            raise dg.Failure(f"materialize {GRIT_PREFIX}/tasks first")
        items = [from_row(r) for r in read_parquet(tasks.path) if r["split"] == "train"]
        fingerprint = _stage_fingerprint([tasks], GRAIN, train)
        folder, meta = _train_or_reuse(
            context, store, GRAIN, GRIT_PREFIX, fingerprint, [tasks.fingerprint], train.resolved(),
            lambda out: stages.grain_stage(items, train, out, data_fingerprint=tasks.fingerprint, cache_root=store.root))
        return dg.MaterializeResult(metadata=checkpoint_metadata(fingerprint, folder, train.preset, meta),
                                    data_version=dg.DataVersion(fingerprint))

    return [_grain]


ABLATIONS = "ablations"


def ablations_asset(domain: str, train: TrainConfig, ablations: Sequence[Any]) -> list:
    """``<domain>/ablations``: one GraphCert GRPO checkpoint per configured ablation (data selection
    × reward), from the same warm start. With none configured it materializes an empty set, so
    every domain has the same assets (and ``dvc.yaml`` the same stages)."""
    from components.training.ablations import run_ablation, select_rows

    @dg.asset(key=stage_key(domain, ABLATIONS), deps=[checkpoints_key(domain)], group_name=GROUP,
              code_version=STAGE_VERSION, kinds={"pytorch"}, tags={"domain": domain, "layer": "training"},
              description=(f"{domain}: GraphCert GRPO ablations from the warm start — "
                           + ("; ".join(f"{a.name} (data {a.data}, reward {a.reward}, budget {a.budget})" for a in ablations)
                              or "none configured (the domain YAML's ablations: list)")))
    def _ablations(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        import components.training as training_pkg

        rec = _stage_inputs(store, domain, [CHECKPOINT, ASSET, "certified_dataset", "graph_snapshot"])
        ckpt, curr, snap, cert = rec[CHECKPOINT], rec[ASSET], rec["graph_snapshot"], rec["certified_dataset"]
        chosen = select_rows(ablations, read_certified(cert.path), read_parquet(curr.path), seed=train.seed)
        config = {"train": train.resolved(), "ablations": [vars(a) for a in ablations]}
        fingerprint = chain_fingerprint([ckpt.fingerprint, curr.fingerprint, cert.fingerprint],
                                        f"{STAGE_VERSION}:{ABLATIONS}:{code_digest(training_pkg.__path__[0])}", config)
        catalog = store.catalog()
        root = store.layer_dir(ABLATIONS, domain) / fingerprint
        previous = catalog.get(ABLATIONS, domain, fingerprint)
        if previous is not None and all((root / a.name / "README.md").is_file() for a in ablations):
            summary = previous.metadata["ablations"]
        else:
            summary = []
            with store.staged(ABLATIONS, domain, fingerprint) as tmp:
                for a in ablations:
                    if not chosen[a.name]:
                        raise dg.Failure(f"{domain}/{ABLATIONS}: ablation {a.name} selects no training rows")
                    result = run_ablation(a, ckpt.path, chosen[a.name], snap.path, train, tmp / a.name,
                                          data_fingerprint=cert.fingerprint, domain=domain)
                    rewards = [c["reward"] for c in result.curves if c.get("reward") is not None]
                    summary.append({"name": a.name, "data": a.data, "reward": a.reward, "budget": a.budget,
                                    "items": len(chosen[a.name]), "path": str(root / a.name),
                                    "last_reward": rewards[-1] if rewards else None, "wall_s": result.wall_s})
            catalog.record(ArtifactRecord(asset=ABLATIONS, domain=domain, fingerprint=fingerprint,
                                          parents=[ckpt.fingerprint, curr.fingerprint, cert.fingerprint], config=config,
                                          row_counts={"ablations": len(summary)}, path=str(root),
                                          metadata={"ablations": summary}))
        return dg.MaterializeResult(
            metadata={"fingerprint": fingerprint, "path": dg.MetadataValue.path(str(root)),
                      "ablations": records_table(summary, [("name", "string"), ("data", "string"), ("reward", "string"),
                                                           ("budget", "string"), ("items", "int"),
                                                           ("last_reward", "float"), ("wall_s", "float")])},
            data_version=dg.DataVersion(fingerprint),
        )

    return [_ablations]
