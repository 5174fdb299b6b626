"""Generation layer: the ``<domain>/qa_candidates`` asset (Quizzer output) and ``grit/tasks``
(GRIT-style graph-reasoning tasks, domain-independent)."""

from dataclasses import asdict
from pathlib import Path

import dagster as dg

from assets.graph import snapshot_key
from assets.metadata import counts_table
from assets.resources import ArtifactStore
from components.quizzer.run import (
    QUIZ_VERSION,
    QuizConfig,
    TqdmProgress,
    quiz_fingerprint,
    read_candidates,
    run_quiz,
    summarize,
    write_candidates,
)
from components.evaluation.grit import GritConfig
from components.store import ArtifactRecord

__all__ = ["GRIT_PREFIX", "GROUP", "grit_tasks_asset", "grit_tasks_key", "qa_candidates_asset", "qa_candidates_key"]

GROUP = "generation"


def qa_candidates_key(domain: str) -> dg.AssetKey:
    return dg.AssetKey([domain, "qa_candidates"])


def _preview(cands: list) -> str:
    rows = ["| quizzer | question | answer | match / return |", "|---|---|---|---|"]
    for c in [c for c in cands if c.ok][:8]:
        q = c.question.replace("|", "\\|")
        rows.append(f"| {c.quizzer} | {q} | {str(c.answer)[:60]} | {c.axes.get('match_family')} / {c.axes.get('return_family')} |")
    return "\n".join(rows)


def qa_candidates_asset(domain: str, quiz: QuizConfig) -> list:
    key = qa_candidates_key(domain)

    @dg.asset(
        key=key,
        deps=[snapshot_key(domain)],
        group_name=GROUP,
        code_version=QUIZ_VERSION,
        kinds={"parquet"},
        description=f"Quizzer candidates (questions, answers, executed evidence) for {domain}.",
        tags={"domain": domain, "layer": "generation"},
    )
    def _qa_candidates(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        catalog = store.catalog()
        snap = catalog.latest("graph_snapshot", domain)
        if snap is None or not snap.path:
            raise dg.Failure(f"no graph_snapshot recorded for {domain}: materialize {domain}/graph_snapshot first")
        fingerprint = quiz_fingerprint(snap.fingerprint, quiz)
        out = store.layer_dir("qa_candidates", domain) / fingerprint / "candidates.parquet"
        previous = catalog.get("qa_candidates", domain, fingerprint)
        if out.is_file() and previous is not None:
            cands = read_candidates(out)
            wall = dict(previous.metadata.get("wall_s", {}))
            context.log.info(f"reusing {len(cands)} candidates for fingerprint {fingerprint}")
        else:
            bars = TqdmProgress(f"{domain} quizzing")
            try:
                run = run_quiz(snap.path, quiz, progress=bars, snapshot_fingerprint=snap.fingerprint)
            finally:
                bars.close()
            cands, wall = run.candidates, run.wall_s
            with store.staged("qa_candidates", domain, fingerprint) as tmp:
                write_candidates(cands, tmp / out.name)
        summary = summarize(cands, wall)
        catalog.record(
            ArtifactRecord(
                asset="qa_candidates",
                domain=domain,
                fingerprint=fingerprint,
                parents=[snap.fingerprint],
                config=quiz.to_json(),
                row_counts={"candidates": summary["total"], "ok": summary["ok"]},
                path=str(out),
                metadata=summary,
            )
        )
        by_kind = {f"{k} {s}": n for k, v in summary["by_kind"].items() for s, n in v.items()}
        return dg.MaterializeResult(
            metadata={
                "fingerprint": fingerprint,
                "snapshot_fingerprint": snap.fingerprint,
                "path": dg.MetadataValue.path(str(out)),
                "candidates": summary["total"],
                "ok": summary["ok"],
                "by_quizzer": counts_table(by_kind, "quizzer / outcome"),
                "failure_reasons": counts_table(summary["failure_reasons"], "reason"),
                "requested_axes": dg.MetadataValue.json(summary["by_axes"]),
                "llm_tokens_per_s": summary["llm_tokens_per_s"] or 0.0,
                "wall_s": dg.MetadataValue.json(summary["wall_s"]),
                "preview": dg.MetadataValue.md(_preview(cands)),
            },
            data_version=dg.DataVersion(fingerprint),
        )

    return [_qa_candidates]


GRIT_PREFIX = "grit"
GRIT_VERSION = "grit-1"


def grit_tasks_key() -> dg.AssetKey:
    return dg.AssetKey([GRIT_PREFIX, "tasks"])


def grit_tasks_asset(config: GritConfig | None = None) -> list:
    from components.evaluation import grit
    from components.store.fingerprint import chain_fingerprint, code_digest, write_parquet

    config = config or grit.GritConfig()

    @dg.asset(key=grit_tasks_key(), group_name=GROUP, code_version=GRIT_VERSION, kinds={"parquet"},
              tags={"layer": "generation"},
              description=("GRIT-style graph-reasoning tasks (six solver tasks, narrative scenarios, four naming schemes) "
                           "with solver ground truth: train / test / OOD-scenario splits."))
    def _grit(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        cfg = asdict(config)
        fingerprint = chain_fingerprint([], f"{GRIT_VERSION}:{code_digest(Path(grit.__file__).parent)}", cfg)
        rows = grit.build_splits(config)
        out = store.layer_dir("grit_tasks", GRIT_PREFIX) / fingerprint / "tasks.parquet"
        with store.staged("grit_tasks", GRIT_PREFIX, fingerprint) as tmp:
            write_parquet(rows, tmp / out.name)
        counts = {f"{r['split']} / {r['task']}": 0 for r in rows}
        for r in rows:
            counts[f"{r['split']} / {r['task']}"] += 1
        namings = {}
        for r in rows:
            namings[r["naming"]] = namings.get(r["naming"], 0) + 1
        store.catalog().record(ArtifactRecord(asset="grit_tasks", domain=GRIT_PREFIX, fingerprint=fingerprint, parents=[],
                                              config=cfg, row_counts={"items": len(rows)}, path=str(out),
                                              metadata={"by_split_task": counts, "by_naming": namings}))
        preview = ["| split | task | naming | question | answer |", "|---|---|---|---|---|"]
        preview += [f"| {r['split']} | {r['task']} | {r['naming']} | {r['question'][:90]}… | {r['answer']} |" for r in rows[:8]]
        return dg.MaterializeResult(
            metadata={"fingerprint": fingerprint, "path": dg.MetadataValue.path(str(out)), "items": len(rows),
                      "by_split_task": counts_table(counts, "split / task"), "by_naming": counts_table(namings, "naming"),
                      "preview": dg.MetadataValue.md("\n".join(preview))},
            data_version=dg.DataVersion(fingerprint),
        )

    return [_grit]
