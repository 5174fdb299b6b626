"""Data-quality checks over a certified table (what the ``certified_dataset`` asset checks call).

* :func:`run_expectations` — a Great Expectations 1.x suite (:func:`expectation_suite`) over the
  whole table, in an ephemeral context (nothing written, no analytics);
* :func:`reverify_admitted` — every admitted row re-certified from its stored record on a fresh
  read-only connection: any hard failure is a failure;
* :func:`leakage_in_admitted` — the leakage filter run again over the admitted rows;
* :func:`cached_check` — one of those computed once per input: a rerun with the same certified
  table, snapshot, evaluation questions and check code reads the stored result
  (``<data>/check-cache/<domain>/``; the result says ``cached``), so a no-op rerun of the
  pipeline does not re-certify every admitted item.

(The funnel-rate bands are Dagster metadata bounds checks on the asset's published rates.)

Each returns a plain dict with ``passed`` and what it found.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from components.quizzer.candidate import QACandidate

__all__ = [
    "CHECK_CACHE",
    "STATUSES_ADMITTED",
    "VERDICTS",
    "cached_check",
    "expectation_suite",
    "leakage_in_admitted",
    "reverify_admitted",
    "run_expectations",
]

log = logging.getLogger(__name__)

#: the data root's folder of stored check results, one subfolder per domain
CHECK_CACHE: Final = "check-cache"
VERDICTS: Final = ("accept", "reject", "uncertain", "skipped", "not_judged")
STATUSES_ADMITTED: Final = ("strict", "partial")


def _frame(rows: Sequence[Mapping[str, Any]]) -> Any:
    import pandas as pd

    df = pd.DataFrame([dict(r) for r in rows])
    if df.empty:
        return pd.DataFrame(
            {
                c: []
                for c in (
                    "id",
                    "status",
                    "verdict",
                    "admitted",
                    "leaked",
                    "question",
                    "answer",
                    "final_program",
                    "n_reasons",
                    "n_evidence",
                )
            }
        )
    df["n_reasons"] = [len(r or []) for r in df["reasons"]]
    df["n_evidence"] = [len(json.loads(e) if isinstance(e, str) else (e or [])) for e in df["evidence_json"]]
    df["admitted"] = df["admitted"].astype(bool)
    df["leaked"] = df["leaked"].astype(bool)
    return df


def expectation_suite() -> Any:
    """The suite (GX objects): identity, vocabularies, and the admission contract."""
    import great_expectations as gx
    from great_expectations.expectations.row_conditions import Column

    e = gx.expectations
    admitted = {"row_condition": Column("admitted") == True}  # noqa: E712 - builds a GX condition
    suite = gx.ExpectationSuite(name="certified_dataset")
    for exp in (
        e.ExpectTableRowCountToBeBetween(min_value=1),
        e.ExpectColumnValuesToNotBeNull(column="id"),
        e.ExpectColumnValuesToBeUnique(column="id"),
        e.ExpectColumnValuesToBeInSet(column="status", value_set=["strict", "partial", "hard_failure"]),
        e.ExpectColumnValuesToBeInSet(column="verdict", value_set=list(VERDICTS)),
        # a hard failure always names its reason; a strict certificate has none
        e.ExpectColumnValuesToBeBetween(
            column="n_reasons", min_value=1, row_condition=Column("status") == "hard_failure"
        ),
        e.ExpectColumnValuesToBeBetween(
            column="n_reasons", min_value=0, max_value=0, row_condition=Column("status") == "strict"
        ),
        # the admission contract: certified, judged acceptable (or judge off), not leaked,
        # with a question, an answer, a supporting program and evidence
        e.ExpectColumnValuesToBeInSet(column="status", value_set=list(STATUSES_ADMITTED), **admitted),
        e.ExpectColumnValuesToBeInSet(column="verdict", value_set=["accept", "skipped"], **admitted),
        e.ExpectColumnValuesToBeInSet(column="leaked", value_set=[False], **admitted),
        e.ExpectColumnValuesToNotBeNull(column="question", **admitted),
        e.ExpectColumnValuesToNotBeNull(column="answer", **admitted),
        e.ExpectColumnValuesToNotBeNull(column="final_program", **admitted),
        e.ExpectColumnValuesToBeBetween(column="n_evidence", min_value=1, **admitted),
    ):
        suite.add_expectation(exp)
    return suite


def _condition_text(cond: Any) -> str | None:
    if cond is None:
        return None
    if isinstance(cond, dict) and {"column", "operator"} <= cond.keys():
        return f"{(cond['column'] or {}).get('name')} {cond['operator']} {cond.get('parameter')!r}"
    return str(cond)


def run_expectations(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Validate the table with :func:`expectation_suite`; ``{"passed", "statistics",
    "results": [{expectation, column, condition, success, unexpected_count, examples}]}``."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx

    ctx = gx.get_context(mode="ephemeral")
    try:
        from great_expectations.data_context.types.base import ProgressBarsConfig

        ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    except (ImportError, AttributeError, TypeError, ValueError) as exc:  # progress bars are cosmetic
        log.debug("could not turn off Great Expectations progress bars: %r", exc)
    source = ctx.data_sources.add_pandas("graphdojo")
    batch_def = source.add_dataframe_asset("certified").add_batch_definition_whole_dataframe("all")
    suite = ctx.suites.add(expectation_suite())
    result = batch_def.get_batch(batch_parameters={"dataframe": _frame(rows)}).validate(suite)
    out = []
    for r in result.results:
        kw = r.expectation_config.kwargs
        cond = kw.get("row_condition")
        out.append(
            {
                "expectation": r.expectation_config.type,
                "column": kw.get("column"),
                "condition": _condition_text(cond),
                "success": bool(r.success),
                "unexpected_count": (r.result or {}).get("unexpected_count"),
                "examples": [str(x) for x in ((r.result or {}).get("partial_unexpected_list") or [])[:5]],
            }
        )
    return {"passed": bool(result.success), "statistics": dict(result.statistics), "results": out}


def reverify_admitted(rows: Sequence[Mapping[str, Any]], db_location: str) -> dict[str, Any]:
    """Re-certify every admitted row from its stored record on a fresh read-only connection."""
    from components.certify.certifier import certify_many
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph import open_backend

    admitted = [QACandidate.from_record(r) for r in rows if r.get("admitted")]
    backend = open_backend(db_location)
    try:
        schema = backend.schema()
        certs = certify_many(
            admitted,
            schema=schema,
            query_path=ReadOnlyQueryPath(backend, schema=schema),
            current_fingerprint=backend.fingerprint(),
        )
    finally:
        backend.close()
    failed = [
        {"id": c.id, "reasons": cert.reasons}
        for c, cert in zip(admitted, certs, strict=True)
        if cert.status == "hard_failure"
    ]
    return {"passed": not failed, "admitted": len(admitted), "failed": len(failed), "failures": failed[:10]}


def leakage_in_admitted(
    rows: Sequence[Mapping[str, Any]], eval_questions: str | None, db_location: str
) -> dict[str, Any]:
    """Run the leakage filter again over the admitted rows; none may match."""
    admitted = [QACandidate.from_record(r) for r in rows if r.get("admitted")]
    if not eval_questions:
        return {
            "passed": True,
            "admitted": len(admitted),
            "leaked": 0,
            "note": "no evaluation set configured (certify.eval_questions)",
        }
    from components.certify.leakage import LeakageFilter, build_lexicon, load_eval_questions
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph import open_backend

    backend = open_backend(db_location)
    try:
        schema = backend.schema()
        lexicon = build_lexicon(ReadOnlyQueryPath(backend, schema=schema), schema)
    finally:
        backend.close()
    _, dropped, report = LeakageFilter(load_eval_questions(eval_questions), lexicon=lexicon).filter(admitted)
    return {
        "passed": not dropped,
        "admitted": len(admitted),
        "leaked": len(dropped),
        "examples": [{"id": c.id, **res.to_json()} for c, res in dropped[:5]],
        "by_where": report["by_where"],
    }


def cached_check(
    name: str,
    compute: Callable[[], dict[str, Any]],
    *,
    data_root: str | Path,
    domain: str,
    inputs: Iterable[str],
    files: Iterable[str | None] = (),
) -> dict[str, Any]:
    """``compute()``'s result (with ``cached``: whether it was read back), stored under a key of
    ``name``, ``inputs`` (the input artifacts' fingerprints), the path and content of each of
    ``files`` (None: no file) and this module's code — so a changed table, graph, question file or
    check is computed afresh."""
    from components.store import hash_path
    from components.store.digest import code_digest
    from components.store.json_cache import cache_key, cached_result

    contents = [f"{f}:{hash_path(f) if f and Path(f).is_file() else ''}" for f in files]
    key = cache_key(name, [*inputs, *contents, code_digest([__name__])])
    result, cached = cached_result(Path(data_root) / CHECK_CACHE / domain, key, compute)
    return {**result, "cached": cached}
