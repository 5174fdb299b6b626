"""Certification layer: the ``<domain>/certified_dataset`` asset and its data-quality checks."""

import json
import warnings

import dagster as dg

from assets.generation import qa_candidates_key
from assets.metadata import counts_table, records_table
from assets.resources import ArtifactStore
from components.certify.dataset import (
    CERTIFY_VERSION,
    FUNNEL_RATES,
    CertifyConfig,
    certify_fingerprint,
    funnel,
    funnel_chart,
    funnel_rates,
    read_certified,
    run_certification,
    write_certified,
)
from components.certify.incremental import previous_certificates
from components.certify.quality import leakage_in_admitted, reverify_admitted, run_expectations
from components.quizzer.run import TqdmProgress, read_candidates
from components.store import ArtifactRecord

__all__ = ["GROUP", "certified_dataset_asset", "certified_dataset_key"]

GROUP = "certification"
ASSET = "certified_dataset"


def certified_dataset_key(domain: str) -> dg.AssetKey:
    return dg.AssetKey([domain, ASSET])


def _preview(rows: list) -> str:
    lines = ["| status | verdict | question | answer |", "|---|---|---|---|"]
    for r in [r for r in rows if r["admitted"]][:8]:
        q = str(r["question"]).replace("|", "\\|")
        lines.append(f"| {r['status']} | {r['verdict']} | {q} | {str(r['answer'])[:60]} |")
    return "\n".join(lines)


def _accuracy_table(report: dict) -> dg.TableMetadataValue:
    cols = [("fault", "string"), ("outcome", "string"), ("expected", "string"), ("injected", "int"),
            ("hard_failures", "int"), ("partial", "int"), ("strict", "int"), ("recall", "float"),
            ("reason_recall", "float"), ("precision", "float")]
    rows = [{**f, "expected": ", ".join(f["expected"])} for f in report.get("faults", [])]
    return records_table(rows, cols)


def _latest(store: ArtifactStore, domain: str) -> tuple[ArtifactRecord, list]:
    rec = store.catalog().latest(ASSET, domain)
    if rec is None or not rec.path:
        raise dg.Failure(f"no {ASSET} recorded for {domain}: materialize {domain}/{ASSET} first")
    return rec, read_certified(rec.path)


def certified_dataset_asset(domain: str, config: CertifyConfig) -> list:
    """The asset plus its checks: blocking (zero admitted, admitted items that fail
    re-verification, leakage, the Great Expectations suite, the certifier's measured accuracy)
    and a WARN bounds check per configured funnel-rate band."""
    key = certified_dataset_key(domain)

    @dg.asset(
        key=key,
        deps=[qa_candidates_key(domain)],
        group_name=GROUP,
        code_version=CERTIFY_VERSION,
        kinds={"parquet"},
        description=(f"Certified QA for {domain}: every candidate with status, reasons, judge verdict and "
                     "leakage outcome; the admitted subset with its evidence structure."),
        tags={"domain": domain, "layer": "certification"},
    )
    def _certified(context: dg.AssetExecutionContext, store: ArtifactStore) -> dg.MaterializeResult:
        catalog = store.catalog()
        cands = catalog.latest("qa_candidates", domain)
        snap = catalog.latest("graph_snapshot", domain)
        if cands is None or not cands.path or snap is None or not snap.path:
            raise dg.Failure(f"materialize {domain}/graph_snapshot and {domain}/qa_candidates first")
        fingerprint = certify_fingerprint(cands.fingerprint, config)
        folder = store.layer_dir(ASSET, domain) / fingerprint
        table, admitted_path, report_path = folder / "certified.parquet", folder / "admitted.parquet", folder / "report.json"
        previous = catalog.get(ASSET, domain, fingerprint)
        if previous is not None and table.is_file() and report_path.is_file():
            rows, report = read_certified(table), json.loads(report_path.read_text())
            context.log.info(f"reusing certified dataset {fingerprint}")
        else:
            reuse, since = previous_certificates(catalog, ASSET, domain, config.to_json(), snap.metadata.get("parts"))
            bars = TqdmProgress(f"{domain} certification")
            try:
                run = run_certification(read_candidates(cands.path), snap.path, config, progress=bars, reuse=reuse)
            finally:
                bars.close()
            context.log.info(f"incremental re-certification: {run.reused} of {len(run.rows)} certificates reused "
                             f"from {since}" if since else "full certification (no earlier run to build on)")
            rows = run.rows
            report = {"accuracy": run.accuracy.to_json() if run.accuracy else None,
                      "leakage": run.leakage_report, "wall_s": run.wall_s, "judge_error": run.judge_error,
                      "reused_certificates": run.reused, "reused_from": since}
            with store.staged(ASSET, domain, fingerprint) as tmp:
                write_certified(rows, tmp / table.name)
                write_certified(run.admitted, tmp / admitted_path.name)
                (tmp / report_path.name).write_text(json.dumps(report, indent=2, default=str))
        stages = funnel(rows)
        rates = funnel_rates(rows)
        n_admitted = sum(bool(r["admitted"]) for r in rows)
        catalog.record(ArtifactRecord(
            asset=ASSET, domain=domain, fingerprint=fingerprint, parents=[cands.fingerprint],
            config=config.to_json(), row_counts={"candidates": len(rows), "admitted": n_admitted},
            path=str(table), metadata={"funnel": stages, "rates": rates, **report},
        ))
        accuracy = report.get("accuracy") or {}
        wall = report.get("wall_s") or {}
        certify_s = wall.get("certify") or 0.0
        return dg.MaterializeResult(
            metadata={
                "fingerprint": fingerprint,
                "candidates_fingerprint": cands.fingerprint,
                "path": dg.MetadataValue.path(str(table)),
                "admitted_path": dg.MetadataValue.path(str(admitted_path)),
                "candidates": len(rows),
                "admitted": n_admitted,
                "funnel": counts_table(dict(stages), "stage"),
                "funnel_chart": dg.MetadataValue.md(funnel_chart(stages)),
                **{rate: float(rates[rate]) for rate in FUNNEL_RATES},
                "judge": config.judge,
                "judge_error": report.get("judge_error") or "",
                "leakage": dg.MetadataValue.json(report.get("leakage") or {"note": "no evaluation set configured"}),
                "certifier_accuracy": _accuracy_table(accuracy),
                "certifier_accuracy_passed": bool(accuracy.get("passed")),
                "false_reject_rate": float(accuracy.get("false_reject_rate") or 0.0),
                "certify_candidates_per_s": len(rows) / certify_s if certify_s else 0.0,
                "wall_s": dg.MetadataValue.json(wall),
                "preview": dg.MetadataValue.md(_preview(rows)),
            },
            data_version=dg.DataVersion(fingerprint),
        )

    @dg.asset_check(asset=key, name="admitted_nonzero", blocking=True,
                    description="At least one candidate is admitted.")
    def _nonzero(store: ArtifactStore) -> dg.AssetCheckResult:
        _, rows = _latest(store, domain)
        n = sum(bool(r["admitted"]) for r in rows)
        return dg.AssetCheckResult(passed=n > 0, metadata={"admitted": n, "candidates": len(rows)})

    @dg.asset_check(asset=key, name="admitted_reverified", blocking=True,
                    description="Every admitted item certifies again from its stored record on a fresh connection.")
    def _reverified(store: ArtifactStore) -> dg.AssetCheckResult:
        _, rows = _latest(store, domain)
        snap = store.catalog().latest("graph_snapshot", domain)
        out = reverify_admitted(rows, snap.path)
        return dg.AssetCheckResult(passed=out["passed"], metadata={
            "admitted": out["admitted"], "failed": out["failed"], "failures": dg.MetadataValue.json(out["failures"])})

    @dg.asset_check(asset=key, name="no_leakage", blocking=True,
                    description="No admitted item grounds an entity of the evaluation set.")
    def _no_leakage(store: ArtifactStore) -> dg.AssetCheckResult:
        _, rows = _latest(store, domain)
        snap = store.catalog().latest("graph_snapshot", domain)
        out = leakage_in_admitted(rows, config.eval_questions, snap.path)
        return dg.AssetCheckResult(passed=out["passed"], metadata={
            k: (dg.MetadataValue.json(v) if isinstance(v, (dict, list)) else v) for k, v in out.items() if k != "passed"})

    @dg.asset_check(asset=key, name="expectations", blocking=True,
                    description="The Great Expectations suite over the certified table.")
    def _expectations(store: ArtifactStore) -> dg.AssetCheckResult:
        _, rows = _latest(store, domain)
        out = run_expectations(rows)
        cols = [("expectation", "string"), ("column", "string"), ("condition", "string"),
                ("success", "bool"), ("unexpected_count", "int")]
        return dg.AssetCheckResult(passed=out["passed"], metadata={
            "results": records_table(out["results"], cols),
            "statistics": dg.MetadataValue.json(out["statistics"]),
            "failed": dg.MetadataValue.json([r for r in out["results"] if not r["success"]]),
        })

    @dg.asset_check(asset=key, name="certifier_accuracy", blocking=True,
                    description="Injected faults are hard failures (recall >= 0.99 per fault type) and "
                                "untouched certified items re-certify (false rejects <= 0.02).")
    def _accuracy(store: ArtifactStore) -> dg.AssetCheckResult:
        rec, _ = _latest(store, domain)
        accuracy = rec.metadata.get("accuracy") or {}
        if not accuracy:
            return dg.AssetCheckResult(passed=config.fault_sample == 0, metadata={
                "note": "no accuracy report (certify.fault_sample is 0, or nothing was certified)"})
        return dg.AssetCheckResult(passed=bool(accuracy.get("passed")), metadata={
            "recall": float(accuracy.get("recall") or 0.0),
            "false_reject_rate": float(accuracy.get("false_reject_rate") or 0.0),
            "faults": _accuracy_table(accuracy),
        })

    with warnings.catch_warnings():  # the bounds-check builder is marked beta; its use here is plain
        warnings.simplefilter("ignore", dg.BetaWarning)
        bounds = [
            check
            for rate, (lo, hi) in config.bands.items()
            for check in dg.build_metadata_bounds_checks(
                assets=[key], metadata_key=rate, min_value=float(lo), max_value=float(hi),
                severity=dg.AssetCheckSeverity.WARN)
        ]
    return [_certified, _nonzero, _reverified, _no_leakage, _expectations, _accuracy, *bounds]
