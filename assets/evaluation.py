"""Evaluation layer: ``<domain>/eval_reports`` — the baselines and every trained checkpoint of
the domain side by side on the held-out test split, one judge, CIs over seeds; the GRIT-style
``grit/eval_report``; and the train × test ``transfer/matrix``."""

from functools import partial
from pathlib import Path

import dagster as dg

from assets.artifacts import artifact_output, layer_asset, materialize_asset, reads
from assets.generation import GRIT_PREFIX
from assets.metadata import records_table
from assets.resources import ArtifactStore
from components.evaluation.agents import EvalConfig
from components.evaluation.grit_eval import GRIT_EVAL
from components.evaluation.run import EVAL_REPORTS, EvalPlan
from components.evaluation.transfer import TRANSFER_MATRIX, TransferPlan, transfer_inputs
from components.store.artifact import Artifact
from components.training.checkpoint import TrainConfig

__all__ = [
    "GROUP",
    "TRANSFER_PREFIX",
    "eval_reports_asset",
    "eval_reports_key",
    "grit_eval_asset",
    "transfer_matrix_asset",
]

GROUP = "evaluation"
TRANSFER_PREFIX = "transfer"
_asset = partial(layer_asset, group=GROUP, kinds={"html"})
EVAL_READS = (
    "snapshot",
    "curriculum",
    "certified",
    "checkpoint",
    "rft",
    "graphcert",
    "dancer_rl",
    "dancer_dpo",
    "pairs",
    "ablations",
    "dancer_ablations",
)
EVAL_DESCRIPTION = (
    "{domain}: the base model, zero-shot Graph-CoT, GraphRAG and every trained checkpoint (SFT-only, GraphCert GRPO, "
    "GraphDancer warm start, RL and RL→DPO in its environment, configured ablations of both) on the held-out "
    "test split — F1, EM (normalised and raw), ROUGE-L, LLM judge, EH, P(EM|EH), VF, VC, outcomes, breakdowns, "
    "CIs over seeds."
)
GRIT_DESCRIPTION = (
    "GRIT-style evaluation: accuracy per task and naming scheme, variance across namings, ID vs OOD-scenario gap, "
    "structure recovery (node-F1, edge-F1, exact), CIs over seeds."
)
TRANSFER_DESCRIPTION = (
    "Train-domain × test-domain transfer: EM / F1 (95 % CI) of each domain's GraphCert and GraphDancer (stage 1) "
    "checkpoints on every domain's test questions; table and heat-map."
)
CELLS = [("train", "string"), ("test", "string"), ("questions", "int")] + [(m, "float") for m in ("em", "f1", "vf")]


def eval_reports_key(domain: str) -> dg.AssetKey:
    return dg.AssetKey([domain, "eval_reports"])


def _table(rows: list[dict]) -> dg.TableMetadataValue:
    return records_table(rows, [(c, "string") for c in dict.fromkeys(k for r in rows for k in r)])


def _report_metadata(art: Artifact) -> dict:
    """The report (HTML path, Markdown inline) and the tables of whichever evaluation it is."""
    s, files = art.summary, art.summary["files"]
    out = {"report_html": dg.MetadataValue.path(str(art.file(files["html"])))}
    out["report_md"] = dg.MetadataValue.md(Path(art.file(files["markdown"])).read_text())
    if files.get("transcripts"):  # episodes to read beside the tables
        out["transcripts"] = dg.MetadataValue.path(str(art.file(files["transcripts"])))
    if "systems" in s:  # a domain's evaluation
        out.update(systems=_table(s["systems"]), questions=s["questions"], judge_model=s["judge_model"])
        out["seeds"] = dg.MetadataValue.json(s["seeds"])
        for key in (
            "paired",
            "by_answer_type",
            "external_systems",
            "external_paired",
            "external_by_answer_type",
            "data_funnel",
            "data_by_source",
        ):
            if s.get(key):
                out[key] = _table(s[key])
        if s.get("external_outside"):
            out["external_outside_templates"] = dg.MetadataValue.json(s["external_outside"])
        if s.get("ood"):  # out-of-distribution questions, evaluated only
            out.update(ood_systems=_table(s["ood"]), ood_questions=s["ood_questions"])
    if "overview" in s:  # the GRIT-style benchmark
        out.update(overview=_table(s["overview"]), items=s["items"])
    if "cells" in s:  # the transfer matrix
        out["cells"] = records_table(s["cells"], CELLS)
        out["heatmap"] = dg.MetadataValue.path(str(art.file(files["heatmap"])))
    return out


def eval_reports_asset(domain: str, train: TrainConfig, config: EvalConfig) -> list:
    plan, ins = EvalPlan(config, train), reads(domain, *EVAL_READS)

    @_asset(EVAL_REPORTS, eval_reports_key(domain), ins, description=EVAL_DESCRIPTION)
    def _eval(context: dg.AssetExecutionContext, store: ArtifactStore, **inputs: Artifact) -> dg.Output[Artifact]:
        art = materialize_asset(context, store, EVAL_REPORTS, inputs, plan)
        return artifact_output(art, _report_metadata(art))

    return [_eval]


def grit_eval_asset(train: TrainConfig, config: EvalConfig) -> list:
    """``grit/eval_report``: the base model and the GRAIN checkpoint on the GRIT-style test and
    OOD-scenario splits (accuracy per task / naming, naming variance, ID − OOD gap, structure)."""
    plan, key = EvalPlan(config, train), dg.AssetKey([GRIT_PREFIX, "eval_report"])

    @_asset(GRIT_EVAL, key, reads(GRIT_PREFIX, "tasks", "grain"), description=GRIT_DESCRIPTION)
    def _grit_eval(context: dg.AssetExecutionContext, store: ArtifactStore, **inputs: Artifact) -> dg.Output[Artifact]:
        art = materialize_asset(context, store, GRIT_EVAL, inputs, plan)
        return artifact_output(art, _report_metadata(art))

    return [_grit_eval]


def transfer_matrix_asset(domains: list[str], config: EvalConfig) -> list:
    """``transfer/matrix``: every domain's GraphCert and GraphDancer stage-1 checkpoints on every
    domain's held-out test split and graph (the default domain's evaluation settings)."""
    plan, key = TransferPlan(config, tuple(domains)), dg.AssetKey([TRANSFER_PREFIX, "matrix"])
    ins = {name: reads(d, what)[what] for d in domains for what, name in transfer_inputs(d).items()}

    @_asset(TRANSFER_MATRIX, key, ins, description=TRANSFER_DESCRIPTION)
    def _transfer(context: dg.AssetExecutionContext, store: ArtifactStore, **inputs: Artifact) -> dg.Output[Artifact]:
        art = materialize_asset(context, store, TRANSFER_MATRIX, inputs, plan)
        return artifact_output(art, _report_metadata(art))

    return [_transfer]
