"""Generation layer: the ``<domain>/qa_candidates`` asset (Quizzer output) and ``grit/tasks``
(GRIT-style graph-reasoning tasks, domain-independent)."""

from functools import partial
from typing import Any

import dagster as dg

from assets.artifacts import artifact_output, layer_asset, materialize_asset, reads
from assets.metadata import counts_table, md_table
from assets.resources import ArtifactStore
from components.evaluation.grit import GRIT_TASKS, GritConfig
from components.quizzer.run import QA_CANDIDATES, QuizConfig, read_candidates
from components.store.artifact import Artifact

__all__ = ["GRIT_PREFIX", "GROUP", "grit_tasks_asset", "grit_tasks_key", "qa_candidates_asset", "qa_candidates_key"]

GROUP = "generation"
GRIT_PREFIX = "grit"
_asset = partial(layer_asset, group=GROUP, kinds={"parquet"})
CANDIDATES_DESCRIPTION = "Quizzer candidates (questions, answers, executed evidence) for {domain}."
TASKS_DESCRIPTION = (
    "GRIT-style graph-reasoning tasks (six solver tasks, narrative scenarios, four naming schemes) with solver "
    "ground truth: train / test / OOD-scenario splits."
)


def qa_candidates_key(domain: str) -> dg.AssetKey:
    return dg.AssetKey([domain, "qa_candidates"])


def grit_tasks_key() -> dg.AssetKey:
    return dg.AssetKey([GRIT_PREFIX, "tasks"])


def _preview_row(c: Any) -> dict:
    axes = f"{c.axes.get('match_family')} / {c.axes.get('return_family')}"
    return {"quizzer": c.quizzer, "question": c.question, "answer": str(c.answer)[:60], "match / return": axes}


def _candidates_metadata(art: Artifact) -> dict:
    s = art.summary
    by_kind = {f"{k} {status}": n for k, v in s["by_kind"].items() for status, n in v.items()}
    preview = [_preview_row(c) for c in read_candidates(str(art.path)) if c.ok][:8]
    out = {"by_quizzer": counts_table(by_kind, "quizzer / outcome"), "preview": md_table(preview)}
    out["failure_reasons"] = counts_table(s["failure_reasons"], "reason")
    out.update(requested_axes=dg.MetadataValue.json(s["by_axes"]), wall_s=dg.MetadataValue.json(s["wall_s"]))
    out["llm_tokens_per_s"] = s["llm_tokens_per_s"] or 0.0
    if s.get("noise"):  # a noisy pool: how many candidates came from each source, and which faults
        out.update(pool_by_source=counts_table(s["noise"]["by_source"], "source"))
        out.update(pool_composition=dg.MetadataValue.json(s["noise"]))
    return out


def qa_candidates_asset(domain: str, quiz: QuizConfig) -> list:
    @_asset(QA_CANDIDATES, qa_candidates_key(domain), reads(domain, "snapshot"), description=CANDIDATES_DESCRIPTION)
    def _qa_candidates(
        context: dg.AssetExecutionContext, store: ArtifactStore, snapshot: Artifact
    ) -> dg.Output[Artifact]:
        art = materialize_asset(context, store, QA_CANDIDATES, {"snapshot": snapshot}, quiz)
        return artifact_output(art, _candidates_metadata(art))

    return [_qa_candidates]


def _tasks_metadata(art: Artifact) -> dict:
    preview = [{**r, "question": r["question"][:90] + "…"} for r in art.summary["preview"]]
    out = {"by_split_task": counts_table(art.summary["by_split_task"], "split / task")}
    out.update(by_naming=counts_table(art.summary["by_naming"], "naming"), preview=md_table(preview))
    return out


def grit_tasks_asset(config: GritConfig | None = None) -> list:
    config = config or GritConfig()

    @_asset(GRIT_TASKS, grit_tasks_key(), {}, description=TASKS_DESCRIPTION)
    def _grit(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.Output[Artifact]:
        art = materialize_asset(context, store, GRIT_TASKS, {}, config)
        return artifact_output(art, _tasks_metadata(art))

    return [_grit]
