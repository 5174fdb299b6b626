"""Training layer: ``<domain>/curriculum_splits`` (levels and entity-grouped splits of the
certified items) and its check; ``<domain>/checkpoints`` (the warm-start checkpoint)."""

import dagster as dg

from assets.certification import certified_dataset_key
from assets.metadata import counts_table, records_table
from assets.resources import ArtifactStore
from components.certify.dataset import read_certified
from components.curriculum import build_curriculum, curriculum_summary, training_items
from components.graph.schema import GraphSchema
from components.store import ArtifactRecord
from components.store.fingerprint import chain_fingerprint, code_digest, read_parquet, write_parquet
from components.training.checkpoint import TrainConfig, train_checkpoint

__all__ = ["GROUP", "checkpoints_asset", "checkpoints_key", "curriculum_splits_asset", "curriculum_splits_key",
           "preference_pairs_asset", "preference_pairs_key"]

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
        write_parquet(items, out)
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


def _curve(values: list[float], width: int = 40) -> str:
    """A loss curve as a Markdown text chart (one bar per logged step)."""
    if not values:
        return "(no steps logged)"
    hi = max(values) or 1.0
    lines = ["```text"] + [f"step {i + 1:>3} {'█' * max(1, round(width * v / hi))} {v:.4f}" for i, v in enumerate(values)]
    return "\n".join(lines + ["```"])


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
        folder = store.layer_dir(CHECKPOINT, domain) / fingerprint
        previous = catalog.get(CHECKPOINT, domain, fingerprint)
        if previous is not None and (folder / "README.md").is_file():
            meta = dict(previous.metadata)
            context.log.info(f"reusing checkpoint {fingerprint}")
        else:
            try:
                result = train_checkpoint(rows, snap.path, train, folder, data_fingerprint=curr.fingerprint,
                                          domain=domain, cache_root=store.root)
            except ValueError as exc:
                raise dg.Failure(f"{domain}: {exc}") from exc
            meta = {"losses": result.losses, "examples": result.examples, "dropped": len(result.dropped),
                    "base_model": result.base_model, "wall_s": result.wall_s, "config": result.config}
            catalog.record(ArtifactRecord(asset=CHECKPOINT, domain=domain, fingerprint=fingerprint,
                                          parents=[curr.fingerprint], config=train.resolved(),
                                          row_counts={"examples": result.examples}, path=str(folder), metadata=meta))
        losses = meta["losses"]
        return dg.MaterializeResult(
            metadata={
                "fingerprint": fingerprint,
                "path": dg.MetadataValue.path(str(folder)),
                "preset": train.preset,
                "base_model": meta["base_model"],
                "method": "sft-warm-start",
                "examples": meta["examples"],
                "teacher_dropped": meta["dropped"],
                "first_loss": float(losses[0]) if losses else 0.0,
                "last_loss": float(losses[-1]) if losses else 0.0,
                "loss_curve": dg.MetadataValue.md(_curve(losses)),
                "wall_s": float(meta["wall_s"]),
                "model_card": dg.MetadataValue.md((folder / "README.md").read_text()),
            },
            data_version=dg.DataVersion(fingerprint),
        )

    return [_checkpoint]


PAIRS = "preference_pairs"
PAIRS_VERSION = "pairs-1"


def preference_pairs_key(domain: str) -> dg.AssetKey:
    return dg.AssetKey([domain, PAIRS])


def preference_pairs_asset(domain: str, train: TrainConfig) -> list:
    key = preference_pairs_key(domain)

    @dg.asset(
        key=key,
        deps=[checkpoints_key(domain)],
        group_name=GROUP,
        code_version=PAIRS_VERSION,
        kinds={"parquet"},
        description=(f"GraphDancer preference pairs for {domain}: M = 8 trajectories per training question from the "
                     "checkpoint, ranked by (EM, EH, VF, -L, -I, -N), best vs worst; uniform pools dropped."),
        tags={"domain": domain, "layer": "training"},
    )
    def _pairs(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        import components.training as training_pkg
        from components.training.preferences import PreferenceConfig, sample_preference_pairs

        catalog = store.catalog()
        ckpt, curr, snap = (catalog.latest(a, domain) for a in (CHECKPOINT, ASSET, "graph_snapshot"))
        if ckpt is None or curr is None or snap is None:
            raise dg.Failure(f"materialize {domain}/checkpoints first")
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
            write_parquet(pairs, out)
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
