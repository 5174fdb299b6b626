"""Training layer: ``<domain>/curriculum_splits`` (levels and entity-grouped splits of the
certified items) and its check; the warm-start ``checkpoints``; the RL stages (GraphCert GRPO,
GraphDancer RL and RL→DPO with its ``preference_pairs``); the ``ablations``; and
``grit/grain_checkpoint``."""

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import dagster as dg

from assets.artifacts import artifact_output, layer_asset, materialize_asset, reads
from assets.metadata import counts_table, md_table, records_table
from assets.resources import ArtifactStore
from components.curriculum import CURRICULUM_SPLITS
from components.curriculum.build import SplitConfig
from components.store.artifact import Artifact, Layer
from components.training import stages
from components.training.ablations import ABLATIONS, Ablation, AblationPlan
from components.training.checkpoint import CHECKPOINTS, CURVE_KEYS, VALIDATION_KEYS, TrainConfig
from components.training.dancer_ablations import DANCER_ABLATION_LAYER, LABELS
from components.training.preferences import PREFERENCE_PAIRS
from components.training.rft import GRAPHCERT_RFT

__all__ = [
    "ABLATIONS_ASSET",
    "DANCER_DPO",
    "DANCER_RL",
    "GRAIN",
    "GRAPHCERT",
    "GROUP",
    "RFT",
    "ablations_asset",
    "dancer_ablations_asset",
    "checkpoint_metadata",
    "checkpoints_asset",
    "checkpoints_key",
    "curriculum_splits_asset",
    "curriculum_splits_key",
    "grain_checkpoint_asset",
    "preference_pairs_asset",
    "preference_pairs_key",
    "rl_stage_assets",
    "stage_key",
]

GROUP = "training"
GRAPHCERT, DANCER_RL, DANCER_DPO, GRAIN = "graphcert_grpo", "graphdancer_rl", "graphdancer_dpo", "grain_checkpoint"
RFT = "graphcert_rft"
ABLATIONS_ASSET = "ablations"
_asset = partial(layer_asset, group=GROUP)
CURRICULUM = (
    "Curriculum levels (Easy / Medium / Hard) and entity-grouped train / validation / test splits of {domain}'s "
    "admitted items."
)
WARM_START = (
    "The {domain} warm-start checkpoint ({preset}): SFT on teacher trajectories of the training split, environment "
    "tokens masked; a Hugging Face folder with a model card."
)
PAIRS = (
    "GraphDancer preference pairs for {domain}: M trajectories per training question (the preset's pair_samples) "
    "from the stage-1 (RL) checkpoint, ranked by (EM, EH, VF, -L, -I, -N), best vs worst; uniform pools dropped."
)
NO_CROSSING = "No grounded entity appears in two splits, and there is training data."
UNTRAINED = (
    " When the sampled pools gave no pair, nothing is trained: the materialization says trained = false and why."
)
SAMPLER = [("stage point", "string")] + [(level, "float") for level in ("easy", "medium", "hard")]
CURVES = [("step", "int")] + [(c, "float") for c in CURVE_KEYS]
VALIDATION = [("step", "int"), ("episodes", "int")] + [
    (c, "float") for c in VALIDATION_KEYS if c not in ("step", "episodes")
]
ABLATION_COLUMNS = [(c, "string") for c in ("name", "stage", "data", "reward", "budget")] + [
    ("seed", "int"),
    ("items", "int"),
    ("examples", "int"),
    ("last_reward", "float"),
    ("last_loss", "float"),
    ("wall_s", "float"),
    ("reused", "bool"),
]


DANCER_ABLATION_COLUMNS = [("ablation", "string"), ("trained", "bool"), ("folder", "string"), ("pairs", "int")] + [
    ("note", "string")
]


def stage_key(domain: str, stage: str) -> dg.AssetKey:
    return dg.AssetKey([domain, stage])


def curriculum_splits_key(domain: str) -> dg.AssetKey:
    return stage_key(domain, "curriculum_splits")


def checkpoints_key(domain: str) -> dg.AssetKey:
    return stage_key(domain, "checkpoints")


def preference_pairs_key(domain: str) -> dg.AssetKey:
    return stage_key(domain, "preference_pairs")


def _curriculum_metadata(art: Artifact) -> dict:
    s = art.summary
    sampler = [{"stage point": k, **{lv: round(v, 3) for lv, v in p.items()}} for k, p in s["sampler"].items()]
    out = {"by_level_split": counts_table(s["by_level_split"], "level/split")}
    out.update(crossing_entities=len(s["crossing_entities"]), sampler_p=records_table(sampler, SAMPLER))
    traj = s.get("trajectories")
    if traj:  # curriculum.trajectories: Graph-CoT teacher trajectories measured the levels
        cover = [
            {"family": fam, "items": r["items"], "trajectories": r["trajectories"], "excluded": r["excluded"]}
            for fam, r in traj["coverage"].items()
        ]
        out.update(
            teacher_trajectories=traj["trajectories"],
            trajectory_exclusions=counts_table(traj["excluded"], "reason"),
            trajectory_coverage=md_table(cover),
            level_confusion=md_table([{"estimated": est, **row} for est, row in traj["confusion"].items()]),
        )
    return out


def curriculum_splits_asset(domain: str, seed: int | SplitConfig = 0) -> list:
    key = curriculum_splits_key(domain)

    @_asset(CURRICULUM_SPLITS, key, reads(domain, "certified", "snapshot"), {"parquet"}, CURRICULUM)
    def _curriculum(context: dg.AssetExecutionContext, store: ArtifactStore, **inputs: Artifact) -> dg.Output[Artifact]:
        art = materialize_asset(context, store, CURRICULUM_SPLITS, inputs, seed)
        return artifact_output(art, _curriculum_metadata(art))

    @dg.asset_check(asset=key, name="no_entity_crosses_splits", blocking=True, description=NO_CROSSING)
    def _no_crossing(curriculum_splits: Artifact) -> dg.AssetCheckResult:
        crossing = curriculum_splits.summary["crossing_entities"]
        train = sum(v for k, v in curriculum_splits.summary["by_level_split"].items() if k.endswith("/train"))
        metadata = {"crossing": len(crossing), "train_items": train, "examples": dg.MetadataValue.json(crossing[:10])}
        return dg.AssetCheckResult(passed=not crossing and train > 0, metadata=metadata)

    return [_curriculum, _no_crossing]


def _curve(values: Sequence[float], width: int = 40) -> str:
    """A per-step curve as a Markdown text chart (one bar per logged step, scaled to the largest
    magnitude)."""
    if not values:
        return "(no steps logged)"
    hi = max(abs(v) for v in values) or 1.0
    lines = [f"step {i + 1:>3} {'█' * max(1, round(width * abs(v) / hi))} {v:.4f}" for i, v in enumerate(values)]
    return "\n".join(["```text", *lines, "```"])


def checkpoint_metadata(art: Artifact, preset: str) -> dict[str, Any]:
    """Dagster metadata of a checkpoint: losses, the per-step curves (table, text charts, PNG), for
    the RL stages the validation-reward curve and how the training questions were chosen, and the
    model card (nothing but ``trained: false`` and why for a stage that trained nothing)."""
    s = art.summary
    if s.get("trained") is False:
        return {"trained": False, "reason": s["reason"], **({"pairs": 0} if "pairs" in s else {})}
    losses, curves = s["losses"], s.get("curves") or []
    out: dict[str, Any] = {"trained": True} if s.get("trained") else {}
    if "pairs" in s:
        out["pairs"] = s["pairs"]
    out.update(
        preset=preset, base_model=s["base_model"], method=s.get("method", "sft-warm-start"), dropped=s["dropped"]
    )
    out.update(first_loss=float(losses[0]) if losses else 0.0, last_loss=float(losses[-1]) if losses else 0.0)
    out.update(wall_s=float(s["wall_s"]), model_card=dg.MetadataValue.md(art.file("README.md").read_text()))
    if curves:
        out["curves"] = records_table(curves, CURVES)
    for name in CURVE_KEYS:
        values = [float(c[name]) for c in curves if c.get(name) is not None]
        if values:
            out[f"{name}_curve"], out[f"last_{name}"] = dg.MetadataValue.md(_curve(values)), values[-1]
    validation = s.get("validation") or []
    if validation:
        out["validation_curve"] = records_table(validation, VALIDATION)
        out["validation_reward_first"] = float(validation[0]["reward"])
        out["validation_reward_last"] = float(validation[-1]["reward"])
        if s.get("chosen_step") is not None:  # the saved weights' step (0: the stage did not improve its start)
            out["chosen_step"], out["improved"] = int(s["chosen_step"]), bool(s.get("improved"))
    if s.get("selection"):
        out["question_selection"] = dg.MetadataValue.json(dict(s["selection"]))
    teacher = s.get("teacher") or {}
    if teacher:  # the warm start's teacher data: what it covers, where its loss falls
        cov = teacher["coverage"]
        out["teacher_families"] = counts_table(cov["families"] or {"none": 0}, "template family")
        out["teacher_relationships"] = counts_table(cov["relationships"] or {"none": 0}, "relationship use")
        out["decision_token_share"] = float(teacher["decision_tokens"]["share"])
    if art.file("curves.png").is_file():
        out["curves_png"] = dg.MetadataValue.path(str(art.file("curves.png")))
    return out


def _trained(layer: Layer, key: dg.AssetKey, ins: Mapping[str, dg.AssetKey], train: TrainConfig, text: str) -> Any:
    """A checkpoint asset: ``ins`` → ``layer``'s builder → checkpoint metadata."""

    @_asset(layer, key, ins, {"pytorch"}, text.replace("{preset}", train.preset))
    def _checkpoint(context: dg.AssetExecutionContext, store: ArtifactStore, **inputs: Artifact) -> dg.Output[Artifact]:
        art = materialize_asset(context, store, layer, inputs, train)
        return artifact_output(art, checkpoint_metadata(art, train.preset))

    return _checkpoint


def checkpoints_asset(domain: str, train: TrainConfig) -> list:
    ins = reads(domain, "curriculum", "certified", "snapshot")
    return [_trained(CHECKPOINTS, checkpoints_key(domain), ins, train, WARM_START)]


#: the RL stages: asset name → (layer, the inputs its builder reads, what the description calls it, method)
RL_STAGES = {
    RFT: (
        GRAPHCERT_RFT,
        ("checkpoint", "curriculum", "certified", "snapshot"),
        "certified rejection-sampling fine-tuning from the warm start",
        "graphcert-rft",
    ),
    GRAPHCERT: (
        stages.GRAPHCERT_GRPO,
        ("checkpoint", "rft", "curriculum", "certified", "snapshot"),
        "GraphCert GRPO from the warm start, or from rejection-sampling fine-tuning when that trained",
        "graphcert-grpo",
    ),
    DANCER_RL: (
        stages.GRAPHDANCER_RL,
        ("checkpoint", "curriculum", "snapshot"),
        "GraphDancer stage 1",
        "graphdancer-rl",
    ),
    DANCER_DPO: (stages.GRAPHDANCER_DPO, ("stage1", "pairs", "curriculum"), "GraphDancer stage 2", "graphdancer-dpo"),
}


def rl_stage_assets(domain: str, train: TrainConfig) -> list:
    """``<domain>/graphcert_rft``, ``<domain>/graphcert_grpo`` and ``<domain>/graphdancer_rl`` (all
    from the warm start) and ``<domain>/graphdancer_dpo`` (from stage 1, on the preference pairs)."""
    out = []
    for name, (layer, names, what, method) in RL_STAGES.items():
        text = f"{{domain}}: {what} — {stages.METHODS[method]}" + (UNTRAINED if name == DANCER_DPO else "")
        if name == RFT:
            text += " With rft_rounds 0 (the demo's default) nothing is trained: trained = false and why."
        out.append(_trained(layer, stage_key(domain, name), reads(domain, *names), train, text))
    return out


def _pairs_metadata(art: Artifact) -> dict:
    s = art.summary
    out = {k: s[k] for k in ("questions", "samples_per_question", "trajectories")}
    out["dropped"] = counts_table(s["dropped"] or {"none": 0}, "reason")
    out.update({k: float(s[k]) for k in ("pairs_per_question", "answered_rate", "valid_format_rate", "mean_rounds")})
    return out


def preference_pairs_asset(domain: str, train: TrainConfig) -> list:
    ins = reads(domain, "stage1", "curriculum", "snapshot")

    @_asset(PREFERENCE_PAIRS, preference_pairs_key(domain), ins, {"parquet"}, PAIRS)
    def _pairs(context: dg.AssetExecutionContext, store: ArtifactStore, **inputs: Artifact) -> dg.Output[Artifact]:
        art = materialize_asset(context, store, PREFERENCE_PAIRS, inputs, train)
        return artifact_output(art, _pairs_metadata(art))

    return [_pairs]


def dancer_ablations_asset(domain: str, train: TrainConfig) -> list:
    """``<domain>/dancer_ablations``: GraphDancer's NoPPO / NoDPO / NoCurriculum ablations
    (``train.dancer_ablations``) from its warm start. With none configured it materializes an
    empty set, so every domain has the same assets."""
    ins = reads(domain, "stage1", "checkpoint", "curriculum", "snapshot")
    listed = ", ".join(LABELS[a] for a in train.dancer_ablations) or "none configured (train.dancer_ablations: list)"
    text = "{domain}: GraphDancer ablations — " + listed + " (components/training/dancer_ablations.py)"

    @_asset(DANCER_ABLATION_LAYER, stage_key(domain, "dancer_ablations"), ins, {"pytorch"}, text)
    def _dancer_ablations(
        context: dg.AssetExecutionContext, store: ArtifactStore, **inputs: Artifact
    ) -> dg.Output[Artifact]:
        art = materialize_asset(context, store, DANCER_ABLATION_LAYER, inputs, train)
        rows = [
            {
                "ablation": a["label"],
                "trained": a["trained"],
                "folder": a["folder"] or a.get("same_as") or "",
                "pairs": a.get("pairs"),
                "note": a.get("stage") or a.get("reason") or "",
            }
            for a in art.summary["ablations"]
        ]
        return artifact_output(art, {"ablations": records_table(rows, DANCER_ABLATION_COLUMNS)})

    return [_dancer_ablations]


def grain_checkpoint_asset(train: TrainConfig) -> list:
    """``grit/grain_checkpoint``: GRAIN (SFT then GRPO) on the GRIT-style tasks."""
    text = f"GRAIN ({train.preset}) — {stages.METHODS['grain']}"
    return [_trained(stages.GRAIN_CHECKPOINT, dg.AssetKey(["grit", GRAIN]), reads("grit", "tasks"), train, text)]


def ablations_asset(domain: str, train: TrainConfig, ablations: Sequence[Ablation]) -> list:
    """``<domain>/ablations``: one checkpoint per configured ablation — GraphCert GRPO from the
    same warm start (data selection × reward), or SFT from the base model (the certification
    ablation's data arms). With none configured it materializes an empty set, so every domain
    has the same assets (and ``dvc.yaml`` the same stages)."""
    plan, ins = (
        AblationPlan(train, tuple(ablations)),
        reads(domain, "checkpoint", "curriculum", "certified", "snapshot"),
    )
    listed = "; ".join(f"{a.name} ({a.stage}, data {a.data}, reward {a.reward}, budget {a.budget})" for a in ablations)
    text = "{domain}: training ablations — " + (listed or "none configured (ablations: list)")

    @_asset(ABLATIONS, stage_key(domain, ABLATIONS_ASSET), ins, {"pytorch"}, text)
    def _ablations(context: dg.AssetExecutionContext, store: ArtifactStore, **inputs: Artifact) -> dg.Output[Artifact]:
        art = materialize_asset(context, store, ABLATIONS, inputs, plan)
        return artifact_output(art, {"ablations": records_table(art.summary["ablations"], ABLATION_COLUMNS)})

    return [_ablations]
