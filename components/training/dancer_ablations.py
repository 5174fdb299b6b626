"""GraphDancer's ablations (``train.dancer_ablations``), each a checkpoint beside the full pipeline
whose row joins the domain's evaluation report:

* ``no_ppo`` — **NoPPO**: no stage 1; preference pairs sampled from the warm start, then DPO from
  the warm start (which is also the frozen reference).
* ``no_dpo`` — **NoDPO**: the stage-1 checkpoint itself, nothing trained here (its report row
  reuses stage 1's answers rather than sampling the same model twice).
* ``no_curriculum`` — **NoCurriculum**: stage 1 and DPO with questions / pairs drawn uniformly
  instead of by the easy-to-hard sampler ``p(t, k)``; the same budgets, probe and environment.

The warm start is GraphDancer's own: the Graph-CoT warm start inside the stage-1 artifact with
``train.dancer_env: graph_cot``, else the Cypher warm start (``checkpoints``). Stage budgets are
the preset's, as for the full pipeline.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from components.store.artifact import Artifact, BuildContext, Layer
from components.store.fingerprint import read_parquet
from components.training.checkpoint import TrainConfig

__all__ = ["DANCER_ABLATION_LAYER", "LABELS", "build_dancer_ablations", "dancer_warm_start", "pairs_then_dpo"]

#: ablation name → its report label
LABELS: Final = {"no_ppo": "NoPPO", "no_dpo": "NoDPO", "no_curriculum": "NoCurriculum"}


def dancer_warm_start(train: TrainConfig, stage1: Artifact, checkpoint: Artifact) -> Path:
    """GraphDancer's warm start: the Graph-CoT one inside ``stage1`` (``dancer_env: graph_cot``),
    else the Cypher warm start ``checkpoint``."""
    from components.training.stages import DANCER_WARM_START

    if train.dancer_environment == "graph_cot":
        return Path(str(stage1.path)) / DANCER_WARM_START
    return Path(str(checkpoint.path))


def pairs_then_dpo(
    start: str | Path,
    items: Sequence[Mapping[str, Any]],
    db: str,
    train: TrainConfig,
    out: Path,
    *,
    domain: str,
    fingerprint: str,
    curriculum: bool = True,
) -> dict[str, Any]:
    """Preference pairs sampled from ``start`` on ``items`` (training curriculum items), then DPO
    from ``start`` into ``out`` (pairs in curriculum order, or uniform with ``curriculum=False``):
    ``trained``, ``pairs`` and the pair report, or ``trained: False`` and why."""
    from components.training.preferences import preference_config, sample_preference_pairs
    from components.training.stages import graphdancer_dpo

    pairs, report = sample_preference_pairs(str(start), items, db, preference_config(train))
    if not pairs:
        return {"trained": False, "reason": f"0 preference pairs ({report['dropped']})", "pairs": 0, "report": report}
    levels = {str(i["id"]): i["level"] for i in items}
    result = graphdancer_dpo(
        start,
        pairs,
        levels,
        train.for_stage("graphdancer_dpo"),
        out,
        data_fingerprint=fingerprint,
        domain=domain,
        curriculum=curriculum,
    )
    return {"trained": True, "pairs": len(pairs), "losses": result.losses, "wall_s": result.wall_s, "report": report}


def build_dancer_ablations(
    inputs: Mapping[str, Artifact], train: TrainConfig, out_dir: Path, ctx: BuildContext
) -> Artifact:
    """The ``dancer_ablations`` layer: one folder per trained ablation of ``train.dancer_ablations``
    (module docstring); the summary lists each with ``name``, ``label``, ``folder`` (None: nothing
    trained here), ``trained`` and, for NoDPO, ``same_as``. None configured: an empty set."""
    from components.curriculum import split_items
    from components.training.stages import graphdancer_rl

    curriculum, db = inputs["curriculum"], str(inputs["snapshot"].path)
    table = read_parquet(str(curriculum.path))
    items, held_out = split_items(table, "train"), split_items(table, "validation")
    warm = dancer_warm_start(train, inputs["stage1"], inputs["checkpoint"])
    out_dir.mkdir(parents=True, exist_ok=True)
    records: list[dict[str, Any]] = []
    for name in train.dancer_ablations:
        record: dict[str, Any] = {"name": name, "label": LABELS[name], "folder": None}
        ctx.log(f"{ctx.domain}/dancer_ablations: {LABELS[name]}")
        if name == "no_dpo":
            record.update(trained=True, same_as="graphdancer-rl")
        elif name == "no_ppo":
            record.update(
                pairs_then_dpo(
                    warm, items, db, train, out_dir / name, domain=ctx.domain, fingerprint=curriculum.fingerprint
                )
            )
            record["folder"] = name if record["trained"] else None
        else:  # no_curriculum
            stage1_dir = out_dir / f".{name}.stage1"  # removed once DPO has saved
            stage = train.for_stage("graphdancer_rl")
            graphdancer_rl(
                str(warm),
                items,
                db,
                stage,
                stage1_dir,
                data_fingerprint=curriculum.fingerprint,
                domain=ctx.domain,
                validation=held_out,
                curriculum=False,
            )
            record["folder"] = name
            record.update(
                pairs_then_dpo(
                    stage1_dir,
                    items,
                    db,
                    train,
                    out_dir / name,
                    domain=ctx.domain,
                    fingerprint=curriculum.fingerprint,
                    curriculum=False,
                )
            )
            if not record["trained"]:  # keep the stage-1 model: it is what the ablation trained
                stage1_dir.rename(out_dir / name)
            else:
                shutil.rmtree(stage1_dir, ignore_errors=True)
            record["stage"] = "stage 1 + DPO" if record["trained"] else "stage 1 only (no preference pairs)"
            record["trained"] = True
        records.append(record)
    return DANCER_ABLATION_LAYER.artifact(
        inputs,
        train,
        ctx,
        path=out_dir,
        counts={"checkpoints": sum(1 for r in records if r["folder"])},
        summary={"ablations": records, "environment": train.dancer_environment},
    )


def _params(train: TrainConfig) -> dict[str, Any]:
    return {"train": train.resolved(), "dancer_ablations": list(train.dancer_ablations)}


DANCER_ABLATION_LAYER: Final = Layer("dancer_ablations", build_dancer_ablations, _params)
