"""GRIT-style evaluation of graph-IR solvers: a model writes the story's graph as IR,
calls the solver and answers; per item we record correctness and structure recovery.

:func:`grit_records` plays the graph-IR environment (GRAIN's system prompt) for every item and
seed; :func:`grit_summary` reports accuracy per task, per naming scheme and the **variance across
namings**, in-distribution (``test``) vs ``ood`` accuracy and their **gap**, accuracy on
``large`` graphs when that split is present, and **structure recovery** (node-F1, weighted
edge-F1, exact match of the last ``<graph>`` block against the gold IR), each with a 95 %
bootstrap CI over seeds and items.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from components.evaluation.agents import EvalConfig
from components.evaluation.metrics import bootstrap_ci
from components.evaluation.run import EvalPlan
from components.store.artifact import Artifact, BuildContext, Layer
from components.store.fingerprint import read_parquet

__all__ = ["GRIT_EVAL", "GritRecord", "build_grit_eval", "evaluate_grit", "grit_items", "grit_records", "grit_summary"]

#: the GRIT splits evaluated, in report order
EVAL_SPLITS: Final = ("test", "ood", "large")

_GRAPH = re.compile(r"<graph>(.*?)</graph>", re.S)


@dataclass
class GritRecord:
    system: str
    seed: int
    item_id: str
    split: str
    task: str
    naming: str
    scenario: str
    n_nodes: int
    answer: str | None
    gold: str
    correct: bool
    valid_format: bool
    node_f1: float
    edge_f1: float
    exact: float
    tokens: int
    latency_s: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def grit_records(
    system: str, backend: Any, items: Sequence[Mapping[str, Any]], config: EvalConfig, *, new_tokens: int = 256
) -> list[GritRecord]:
    """One record per (item, sample) (``items``: rows with ``gold_ir`` decoded)."""
    from components.rollout.runner import STOPS, RolloutConfig, RolloutRunner
    from components.rubric.rewards import grain_correct, graph_structure_scores
    from components.tools.episodes import GRAPH_IR_SYSTEM_PROMPT, GraphIREnvironment

    rows = [{"question": it["question"], "answer": it["answer"], "answer_type": it.get("answer_type")} for it in items]
    runner = RolloutRunner(
        backend,
        lambda: GraphIREnvironment(max_rounds=max(1, config.max_turns - 1)),
        RolloutConfig(
            max_turns=config.max_turns,
            max_new_tokens=new_tokens,
            temperature=config.temperature,
            top_p=config.top_p,
            seed=config.seed,
            stops=STOPS,
            system_prompt=GRAPH_IR_SYSTEM_PROMPT,
        ),
    )
    t0 = time.perf_counter()
    recs = runner.run(rows, n=config.samples)  # row-major
    latency = (time.perf_counter() - t0) / max(1, len(recs))
    out = []
    for k, rec in enumerate(recs):
        it = items[k // config.samples]
        blocks = _GRAPH.findall(rec.completion_text)
        scores = graph_structure_scores(blocks[-1] if blocks else None, it["gold_ir"])
        ans = rec.stats.answer
        out.append(
            GritRecord(
                system,
                k % config.samples,
                str(it["id"]),
                str(it["split"]),
                str(it["task"]),
                str(it["naming"]),
                str(it["scenario"]),
                int(it["n_nodes"]),
                ans,
                str(it["answer"]),
                grain_correct(ans, it["answer"], it.get("answer_type")),
                bool(rec.stats.valid_format),
                scores["node_f1"],
                scores["edge_f1"],
                scores["exact"],
                rec.stats.model_tokens,
                latency,
            )
        )
    return out


def _acc(records: Sequence[GritRecord]) -> float | None:
    return sum(r.correct for r in records) / len(records) if records else None


def _with_ci(records: Sequence[GritRecord], stat: Any = _acc) -> dict[str, Any]:
    lo, hi = bootstrap_ci(records, stat, draws=300)  # type: ignore[arg-type]  # only .item_id is read
    return {"value": stat(records), "ci": [lo, hi], "n": len(records)}


def grit_summary(records: Sequence[GritRecord]) -> dict[str, Any]:
    """The metrics of the module docstring for one system's records."""

    def sel(**kw: str) -> list[GritRecord]:
        return [r for r in records if all(getattr(r, k) == v for k, v in kw.items())]

    ind = sel(split="test")
    by_naming = {n: _with_ci(sel(split="test", naming=n)) for n in sorted({r.naming for r in ind})}
    naming_acc = [v["value"] for v in by_naming.values() if v["value"] is not None]
    ood = sel(split="ood")
    id_acc, ood_acc = _acc(ind), _acc(ood)
    out: dict[str, Any] = {
        "accuracy_id": _with_ci(ind),
        "accuracy_ood": _with_ci(ood),
        "ood_gap": None if id_acc is None or ood_acc is None else id_acc - ood_acc,
        "by_task": {t: _with_ci(sel(split="test", task=t)) for t in sorted({r.task for r in ind})},
        "by_naming": by_naming,
        "naming_variance": statistics.pvariance(naming_acc) if len(naming_acc) > 1 else None,
        "valid_format": sum(r.valid_format for r in records) / len(records) if records else None,
        "structure": {
            k: _with_ci(ind, lambda rs, k=k: sum(getattr(r, k) for r in rs) / len(rs) if rs else None)
            for k in ("node_f1", "edge_f1", "exact")
        },
        "tokens_per_item": statistics.fmean(r.tokens for r in records) if records else None,
    }
    large = sel(split="large")
    if large:
        out["accuracy_large"] = _with_ci(large)
    return out


def grit_items(tasks_path: str | Path, per_split: int) -> list[dict[str, Any]]:
    """The first ``per_split`` items of each evaluated split of a GRIT tasks table."""
    from components.evaluation.grit import from_row

    rows = [from_row(r) for r in read_parquet(tasks_path)]
    return [r for split in EVAL_SPLITS for r in [x for x in rows if x["split"] == split][:per_split]]


def evaluate_grit(
    systems: Mapping[str, str], items: Sequence[Mapping[str, Any]], config: EvalConfig, *, new_tokens: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(summaries, records)``: every system (name → model folder) on every item and seed,
    one :func:`grit_summary` per system."""
    from components.llm.transformers_backend import TransformersBackend

    summaries, records = {}, []
    for name, model in systems.items():
        llm = TransformersBackend(model, threads=config.threads, dtype=config.precision)
        try:
            recs = grit_records(name, llm, items, config, new_tokens=new_tokens)
        finally:
            llm.close()
        summaries[name] = grit_summary(recs)
        records += [r.to_dict() for r in recs]
    return summaries, records


def build_grit_eval(inputs: Mapping[str, Artifact], plan: EvalPlan, out_dir: Path, ctx: BuildContext) -> Artifact:
    """The GRIT evaluation layer: the base model and the ``grain`` checkpoint on the ``tasks``
    input's test / OOD / large items (:func:`evaluate_grit`); writes the report files."""
    from components.evaluation.report import grit_tables, relative_files, write_grit_report
    from components.training.checkpoint import base_model_dir

    items = grit_items(str(inputs["tasks"].path), plan.evaluate.grit_per_split)
    systems = {
        "base (before training)": str(base_model_dir(plan.train.for_stage("grain_checkpoint"), ctx.data_root)),
        "grain": str(inputs["grain"].path),
    }
    new_tokens = plan.train.for_stage("grain_checkpoint").resolved()["grain_new_tokens"]
    summaries, records = evaluate_grit(systems, items, plan.evaluate, new_tokens=new_tokens)
    meta = {
        "items": len(items),
        "seeds": list(plan.evaluate.seeds),
        "decoding": json.dumps(vars(plan.evaluate)),
        "tokens per turn": new_tokens,
        "ground truth": "the exact graph solvers",
    }
    files = write_grit_report(summaries, meta, out_dir, records)
    return GRIT_EVAL.artifact(
        inputs,
        plan,
        ctx,
        path=out_dir,
        counts={"records": len(records)},
        summary={
            "files": relative_files(files, out_dir),
            "overview": grit_tables(summaries)[0][1],
            "items": len(items),
        },
    )


GRIT_EVAL: Final = Layer("eval_reports", build_grit_eval, EvalPlan.params)
