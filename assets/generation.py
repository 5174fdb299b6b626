"""Generation layer: the ``<domain>/qa_candidates`` asset (Quizzer output)."""

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
from components.store import ArtifactRecord

__all__ = ["GROUP", "qa_candidates_asset", "qa_candidates_key"]

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
            write_candidates(cands, out)
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
