"""Certification layer: the ``<domain>/certified_dataset`` asset and its data-quality checks."""

import warnings
from collections.abc import Callable
from typing import Any

import dagster as dg

from assets.artifacts import artifact_output, layer_asset, materialize_asset, reads
from assets.metadata import counts_table, md_table, records_table
from assets.resources import ArtifactStore
from components.certify.dataset import (
    CERTIFIED_DATASET,
    FUNNEL_RATES,
    CertifyConfig,
    funnel_chart,
    read_certified,
    source_chart,
)
from components.certify.quality import cached_check, leakage_in_admitted, reverify_admitted, run_expectations
from components.store.artifact import Artifact

__all__ = ["GROUP", "certified_dataset_asset", "certified_dataset_key"]

GROUP = "certification"
DESCRIPTION = (
    "Certified QA for {domain}: every candidate with status, reasons, judge verdict and leakage outcome; the admitted "
    "subset with its evidence structure."
)
FAULT_COLUMNS = (
    [("fault", "string"), ("outcome", "string"), ("expected", "string")]
    + [(c, "int") for c in ("injected", "hard_failures", "partial", "strict")]
    + [(c, "float") for c in ("recall", "reason_recall", "precision")]
)
SOURCE_COLUMNS = [("source", "string"), ("kind", "string")] + [
    (c, "int")
    for c in (
        "candidates",
        "hard_failure",
        "strict",
        "partial",
        "judge_accept",
        "judge_reject",
        "judge_uncertain",
        "judge_skipped",
        "leaked",
        "admitted",
    )
]
GX_COLUMNS = [(c, "string") for c in ("expectation", "column", "condition")] + [
    ("success", "bool"),
    ("unexpected_count", "int"),
]
ACCURACY = (
    "Injected faults are hard failures (recall >= 0.99 per fault type) and untouched certified items re-certify "
    "(false rejects <= 0.02)."
)


def certified_dataset_key(domain: str) -> dg.AssetKey:
    return dg.AssetKey([domain, "certified_dataset"])


def _accuracy_table(accuracy: dict) -> dg.TableMetadataValue:
    return records_table(
        [{**f, "expected": ", ".join(f["expected"])} for f in accuracy.get("faults", [])], FAULT_COLUMNS
    )


def _json(value: object) -> object:
    return dg.MetadataValue.json(value) if isinstance(value, (dict, list)) else value


def _metadata(art: Artifact, config: CertifyConfig) -> dict:
    s, path = art.summary, str(art.path)
    accuracy, wall = s.get("accuracy") or {}, s.get("wall_s") or {}
    admitted = [r for r in read_certified(path) if r["admitted"]][:8]
    preview = [
        {k: str(r[k])[:60] if k == "answer" else r[k] for k in ("status", "verdict", "question", "answer")}
        for r in admitted
    ]
    out = {"admitted_path": dg.MetadataValue.path(str(art.file("admitted.parquet"))), "preview": md_table(preview)}
    out.update(
        funnel=counts_table(dict(s["funnel"]), "stage"), funnel_chart=dg.MetadataValue.md(funnel_chart(s["funnel"]))
    )
    by_source = s.get("funnel_by_source") or []
    out.update(funnel_by_source=records_table(by_source, SOURCE_COLUMNS))
    out.update(funnel_by_source_chart=dg.MetadataValue.md(source_chart(by_source)))
    out.update({rate: float(s["rates"][rate]) for rate in FUNNEL_RATES})
    out.update(judge=config.judge, judge_error=s.get("judge_error") or "", wall_s=dg.MetadataValue.json(wall))
    out["leakage"] = dg.MetadataValue.json(s.get("leakage") or {"note": "no evaluation set configured"})
    out.update(certifier_accuracy=_accuracy_table(accuracy), certifier_accuracy_passed=bool(accuracy.get("passed")))
    out["false_reject_rate"] = float(accuracy.get("false_reject_rate") or 0.0)
    out["certify_candidates_per_s"] = art.counts["candidates"] / wall["certify"] if wall.get("certify") else 0.0
    out["reused_certificates"] = int(s.get("reused_certificates") or 0)
    return out


def _check(key: dg.AssetKey, name: str, description: str, **kwargs: Any) -> Callable[..., dg.AssetChecksDefinition]:
    """A blocking check of the certified dataset (the decorator)."""
    return dg.asset_check(asset=key, name=name, blocking=True, description=description, **kwargs)


def _table_checks(key: dg.AssetKey, config: CertifyConfig) -> list:
    """Checks of the certified table itself: something admitted, the GX suite, the accuracy."""

    @_check(key, "admitted_nonzero", "At least one candidate is admitted.")
    def _nonzero(certified_dataset: Artifact) -> dg.AssetCheckResult:
        counts = {k: int(v) for k, v in certified_dataset.counts.items()}
        return dg.AssetCheckResult(passed=counts["admitted"] > 0, metadata=counts)

    @_check(key, "expectations", "The Great Expectations suite over the certified table.")
    def _expectations(certified_dataset: Artifact, store: ArtifactStore) -> dg.AssetCheckResult:
        out = cached_check(
            "expectations",
            lambda: run_expectations(read_certified(str(certified_dataset.path))),
            data_root=store.root,
            domain=certified_dataset.domain,
            inputs=[certified_dataset.fingerprint],
        )
        failed = dg.MetadataValue.json([r for r in out["results"] if not r["success"]])
        results, statistics = records_table(out["results"], GX_COLUMNS), dg.MetadataValue.json(out["statistics"])
        return dg.AssetCheckResult(
            passed=out["passed"],
            metadata={"results": results, "statistics": statistics, "failed": failed, "cached": out["cached"]},
        )

    return [_nonzero, _expectations, _accuracy_check(key, config)]


def _accuracy_check(key: dg.AssetKey, config: CertifyConfig) -> dg.AssetChecksDefinition:
    @_check(key, "certifier_accuracy", ACCURACY)
    def _accuracy(certified_dataset: Artifact) -> dg.AssetCheckResult:
        accuracy = certified_dataset.summary.get("accuracy") or {}
        if not accuracy:
            note = "no accuracy report (certify.fault_sample is 0, or nothing was certified)"
            return dg.AssetCheckResult(passed=config.fault_sample == 0, metadata={"note": note})
        rates = {k: float(accuracy.get(k) or 0.0) for k in ("recall", "false_reject_rate")}
        return dg.AssetCheckResult(
            passed=bool(accuracy.get("passed")), metadata={**rates, "faults": _accuracy_table(accuracy)}
        )

    return _accuracy


def _graph_checks(key: dg.AssetKey, domain: str, config: CertifyConfig) -> list:
    """Checks against the graph the table was certified on: re-verification and leakage."""
    ins = {"snapshot": dg.AssetIn(reads(domain, "snapshot")["snapshot"])}
    reverified = "Every admitted item certifies again from its stored record on a fresh connection."

    @_check(key, "admitted_reverified", reverified, additional_ins=ins)
    def _reverified(certified_dataset: Artifact, snapshot: Artifact, store: ArtifactStore) -> dg.AssetCheckResult:
        out = cached_check(
            "admitted_reverified",
            lambda: reverify_admitted(read_certified(str(certified_dataset.path)), str(snapshot.path)),
            data_root=store.root,
            domain=certified_dataset.domain,
            inputs=[certified_dataset.fingerprint, snapshot.fingerprint],
        )
        return dg.AssetCheckResult(
            passed=out["passed"], metadata={k: _json(v) for k, v in out.items() if k != "passed"}
        )

    @_check(key, "no_leakage", "No admitted item grounds an entity of the evaluation set.", additional_ins=ins)
    def _no_leakage(certified_dataset: Artifact, snapshot: Artifact, store: ArtifactStore) -> dg.AssetCheckResult:
        questions = config.eval_questions
        out = cached_check(
            "no_leakage",
            lambda: leakage_in_admitted(read_certified(str(certified_dataset.path)), questions, str(snapshot.path)),
            data_root=store.root,
            domain=certified_dataset.domain,
            inputs=[certified_dataset.fingerprint, snapshot.fingerprint],
            files=[questions],
        )
        return dg.AssetCheckResult(
            passed=out["passed"], metadata={k: _json(v) for k, v in out.items() if k != "passed"}
        )

    return [_reverified, _no_leakage]


def _bounds(key: dg.AssetKey, config: CertifyConfig) -> list:
    """A WARN check per configured funnel-rate band (on the materialization's metadata)."""
    with warnings.catch_warnings():  # the bounds-check builder is marked beta; its use here is plain
        warnings.simplefilter("ignore", dg.BetaWarning)
        return [
            check
            for rate, (lo, hi) in config.bands.items()
            for check in dg.build_metadata_bounds_checks(
                assets=[key],
                metadata_key=rate,
                min_value=float(lo),
                max_value=float(hi),
                severity=dg.AssetCheckSeverity.WARN,
            )
        ]


def certified_dataset_asset(domain: str, config: CertifyConfig) -> list:
    """The asset plus its checks: blocking (zero admitted, admitted items that fail
    re-verification, leakage, the Great Expectations suite, the certifier's measured accuracy)
    and a WARN bounds check per configured funnel-rate band."""
    key, ins = certified_dataset_key(domain), reads(domain, "candidates", "snapshot")

    @layer_asset(CERTIFIED_DATASET, key, ins, {"parquet"}, DESCRIPTION, group=GROUP)
    def _certified(context: dg.AssetExecutionContext, store: ArtifactStore, **inputs: Artifact) -> dg.Output[Artifact]:
        art = materialize_asset(context, store, CERTIFIED_DATASET, inputs, config, incremental=True)
        return artifact_output(art, _metadata(art, config))

    return [_certified, *_table_checks(key, config), *_graph_checks(key, domain, config), *_bounds(key, config)]
