"""The train-domain × test-domain transfer matrix: each domain's trained solvers — its GraphCert
GRPO checkpoint and its GraphDancer stage-1 checkpoint (GraphDancer's own evaluation setting:
train on one domain, test on the unseen others) — answer every domain's held-out test questions
on that domain's graph, in the environment each trained in (the Python + Cypher sandbox; the
Graph-CoT API for GraphDancer trained with ``train.dancer_env: graph_cot``,
:func:`trained_environment`), with the same sampling as the per-domain reports. A row is
``"<train domain>: <method>"``.

:func:`transfer_matrix` returns one cell per (train, test) pair with EM, F1, VF and their 95 %
bootstrap CIs; :func:`write_transfer_report` writes the table (Markdown, self-contained HTML) and
a heat-map of EM.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from components.evaluation.agents import EvalConfig, tool_agent_records
from components.evaluation.metrics import summarize
from components.store.artifact import Artifact, BuildContext, Layer

__all__ = [
    "TRANSFER_MATRIX",
    "TransferPlan",
    "build_transfer_matrix",
    "transfer_inputs",
    "trained_environment",
    "transfer_matrix",
    "write_transfer_report",
]


def transfer_matrix(
    models: Mapping[str, str], tests: Mapping[str, tuple[str, Sequence[Mapping[str, Any]]]], config: EvalConfig
) -> dict[str, Any]:
    """``models``: train domain → model folder; ``tests``: test domain → (graph location, rows)."""
    from components.llm.transformers_backend import TransformersBackend
    from components.rollout.runner import SOLVER_STOPS
    from components.tools.episodes import solver_envs

    cells = []
    for train_domain, model_dir in models.items():
        env, turns = trained_environment(model_dir)
        own = replace(config, max_turns=turns) if turns else config
        llm = TransformersBackend(model_dir, threads=config.threads, dtype=config.precision)
        try:
            for test_domain, (db, rows) in tests.items():
                rows = list(rows)[: config.max_questions]
                if not rows:
                    cells.append({"train": train_domain, "test": test_domain, "questions": 0})
                    continue
                with solver_envs(env, db, max_rounds=max(1, own.max_turns - 1), threads=config.threads) as make_env:
                    recs = tool_agent_records(
                        f"{train_domain}→{test_domain}", llm, make_env, rows, own, stops=SOLVER_STOPS[env]
                    )
                s = summarize(recs, draws=300)
                cells.append(
                    {
                        "train": train_domain,
                        "test": test_domain,
                        "questions": len(rows),
                        **{k: s[k] for k in ("em", "f1", "vf")},
                        **{f"{k}_ci": s[f"{k}_ci"] for k in ("em", "f1")},
                    }
                )
        finally:
            llm.close()
    return {"domains_train": list(models), "domains_test": list(tests), "cells": cells, "decoding": vars(config)}


def trained_environment(model_dir: str | Path) -> tuple[str, int | None]:
    """``(environment, turns)`` a checkpoint trained in, from its ``training_log.json``: GraphDancer
    with ``train.dancer_env: graph_cot`` plays the Graph-CoT API with its ``dancer_turns``;
    everything else the Python + Cypher sandbox with the evaluation's own turns (``None``)."""
    log = Path(model_dir) / "training_log.json"
    config = json.loads(log.read_text()).get("config", {}) if log.is_file() else {}
    if config.get("environment") == "graph_cot":
        return "graph_cot", int(config["dancer_turns"])
    return "python_cypher", None


def write_transfer_report(matrix: Mapping[str, Any], folder: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from components.evaluation.report import fmt_num, html_page, md_table

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(json.dumps(matrix, indent=1, default=str))
    trains, tests = matrix["domains_train"], matrix["domains_test"]
    cell = {(c["train"], c["test"]): c for c in matrix["cells"]}
    rows = []
    for t in trains:
        row = {"train \\ test": t}
        for d in tests:
            c = cell.get((t, d), {})
            lo, hi = c.get("em_ci") or (None, None)
            row[d] = (
                "–"
                if c.get("em") is None
                else f"EM {fmt_num(c['em'])} [{fmt_num(lo, 2)}, {fmt_num(hi, 2)}] · F1 {fmt_num(c['f1'])}"
            )
        rows.append(row)
    fig, ax = plt.subplots(figsize=(1.6 * len(tests) + 2, 1.2 * len(trains) + 1.5))
    grid = [[cell.get((t, d), {}).get("em") or 0.0 for d in tests] for t in trains]
    im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(tests)), tests)
    ax.set_yticks(range(len(trains)), trains)
    ax.set_xlabel("test domain")
    ax.set_ylabel("train domain")
    for i, t in enumerate(trains):
        for j, d in enumerate(tests):
            ax.text(j, i, fmt_num(cell.get((t, d), {}).get("em"), 2), ha="center", va="center", color="w")
    fig.colorbar(im, ax=ax, label="EM")
    ax.set_title("transfer: EM")
    fig.tight_layout()
    plot = folder / "transfer.png"
    fig.savefig(plot, dpi=90)
    plt.close(fig)
    title = "graphdojo transfer matrix"
    md = "\n".join(
        [
            f"# {title}",
            "",
            f"- Decoding: {json.dumps(matrix['decoding'])}",
            "- Cells: EM [95 % CI] · F1 of the train domain's checkpoint (GraphCert GRPO, or GraphDancer "
            "stage 1) on the test domain's held-out questions and graph; a row's own domain is in-domain.",
            "",
            md_table(rows),
            "",
            f"![transfer]({plot.name})",
            "",
        ]
    )
    (folder / "report.md").write_text(md)
    (folder / "report.html").write_text(html_page(md, {"transfer EM": str(plot)}, title, [("Train × test", rows)]))
    return {
        "json": str(folder / "report.json"),
        "markdown": str(folder / "report.md"),
        "html": str(folder / "report.html"),
        "heatmap": str(plot),
    }


# -- the layer -------------------------------------------------------------------------------

#: what the matrix reads of each domain: input-name suffix → the domain's layer
TRANSFER_READS: Final = ("graphcert", "dancer_rl", "snapshot", "curriculum", "certified")
#: the solvers each domain contributes rows for: input-name suffix → row label
SOLVERS: Final = {"graphcert": "GraphCert", "dancer_rl": "GraphDancer"}


def transfer_inputs(domain: str) -> dict[str, str]:
    """Input names of one domain's artifacts in the transfer layer (``<domain>_<what>``)."""
    return {what: f"{domain}_{what}" for what in TRANSFER_READS}


@dataclass(frozen=True)
class TransferPlan:
    evaluate: EvalConfig
    domains: tuple[str, ...]

    def params(self) -> dict[str, Any]:
        return {"config": vars(self.evaluate), "domains": list(self.domains)}


def build_transfer_matrix(
    inputs: Mapping[str, Artifact], plan: TransferPlan, out_dir: Path, ctx: BuildContext
) -> Artifact:
    """The transfer layer: each domain's GraphCert and GraphDancer checkpoints on every domain's
    test split (:func:`transfer_matrix`); writes the table, the report and the heat-map."""
    from components.evaluation.questions import split_questions
    from components.evaluation.report import relative_files

    models, tests = {}, {}
    for d in plan.domains:
        name = transfer_inputs(d)
        for what, label in SOLVERS.items():
            models[f"{d}: {label}"] = str(inputs[name[what]].path)
        tests[d] = (
            str(inputs[name["snapshot"]].path),
            split_questions(str(inputs[name["curriculum"]].path), str(inputs[name["certified"]].path)),
        )
    matrix = transfer_matrix(models, tests, plan.evaluate)
    files = write_transfer_report(matrix, out_dir)
    cells = [
        {
            "train": c["train"],
            "test": c["test"],
            "questions": c.get("questions", 0),
            "em": c.get("em"),
            "f1": c.get("f1"),
            "vf": c.get("vf"),
        }
        for c in matrix["cells"]
    ]
    return TRANSFER_MATRIX.artifact(
        inputs,
        plan,
        ctx,
        path=out_dir,
        counts={"cells": len(matrix["cells"])},
        summary={"files": relative_files(files, out_dir), "cells": cells},
    )


TRANSFER_MATRIX: Final = Layer("eval_reports", build_transfer_matrix, TransferPlan.params)
