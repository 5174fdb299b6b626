"""The certified dataset of one graph snapshot: certify every candidate, judge, filter leakage,
measure the certifier, and write the table (what the ``certified_dataset`` asset and
``graphdojo certify`` build on).

One row per candidate (:func:`run_certification` → :class:`CertifiedRun`): the candidate's own
record (question, answer, final program, evidence, … as in ``qa_candidates``) plus

* ``status`` (strict / partial / hard_failure), ``reasons`` (list), ``certificate_json``;
* ``verdict`` — the judge's accept / reject / uncertain, ``skipped`` with the judge off, or
  ``not_judged`` for hard failures (they never reach it); ``judge_json``;
* ``leaked`` and ``leakage_json`` (matched entities, eval qids, where);
* ``evidence_features_json`` — the Cypher deriver's features of each evidence query (the
  evidence *structure* the rubric scores against);
* ``admitted`` — never for a domain's held-out evaluation questions (``quiz.held_out_n``: they
  are certified, not judged); otherwise :func:`admit`, the one admission rule (the asset and ``graphdojo certify``
  both go through :func:`run_certification`): status strict or partial **and** the judge
  accepted (when on) **and** not leaked; with the judge off only **strict** items are admitted
  (a partial item is one whose support someone must still look at) unless
  ``certify.admit_partial_without_judge`` is true.

The funnel (:func:`funnel`) counts candidates → quizzer failures and hard failures by cause →
strict / partial → judge accept / reject / uncertain (or skipped, with the partial items held
back) → leakage drops → admitted.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from components.certify.accuracy import AccuracyReport, fault_accuracy
from components.certify.certifier import REASONS, RULES_VERSION, Certificate, certify_many
from components.certify.faults import FAULTS
from components.certify.incremental import candidate_key, candidate_reads
from components.certify.judge import JUDGE_PROTOCOL, JudgeVerdict, SemanticJudge
from components.certify.leakage import LeakageFilter, LeakageResult, build_lexicon, load_eval_questions
from components.certify.rederive import Rederiver, judge_examples
from components.cypher.features import features_json
from components.options import checked_options
from components.quizzer.candidate import QACandidate
from components.store.artifact import Artifact, BuildContext, Layer
from components.store.fingerprint import hash_path, read_parquet, write_parquet

__all__ = [
    "ADMITTED_STATUSES",
    "CERTIFIED_DATASET",
    "FUNNEL_RATES",
    "CertifiedRun",
    "CertifyConfig",
    "admit",
    "build_certified_dataset",
    "certify_params",
    "funnel",
    "funnel_by_source",
    "funnel_chart",
    "source_chart",
    "source_totals",
    "funnel_rates",
    "read_certified",
    "run_certification",
    "write_certified",
]

ADMITTED_STATUSES: Final = ("strict", "partial")
JUDGE_MODES: Final = ("off", "on")
#: the judge's model when a domain names none: it writes Cypher for re-derivation
DEFAULT_JUDGE_MODEL: Final = "qwen2.5-coder-0.5b"
#: the judge's stages (:class:`CertifyConfig` ``judge_stages``), in the order they run
JUDGE_STAGES: Final = ("rederive", "review")
#: Rates published as metadata (0..1, over all candidates) that domain configs may bound.
FUNNEL_RATES: Final = (
    "certified_rate",
    "strict_rate",
    "hard_failure_rate",
    "admitted_rate",
    "judge_accept_rate",
    "leakage_rate",
)


@dataclass(frozen=True)
class CertifyConfig:
    """How a domain's candidates are certified (a domain YAML's ``certify:``).

    ``judge``: ``off`` admits the strict candidates unreviewed (the funnel shows the stage as
    skipped and the partial candidates it holds back) — the default, since no judge model that
    runs on a CPU meets the judge's targets yet (docs/certification.md);
    ``admit_partial_without_judge: true`` admits the partial ones too. ``on`` runs the judge —
    ``judge_model`` (a registered name or a local folder, as the quizzer's ``model``; default
    :data:`DEFAULT_JUDGE_MODEL`, a general code model from the registry, so the judge works on a
    graph it never saw) on ``judge_backend`` / ``judge_options`` (as the
    quizzer's backends) — and admits only accepted candidates. ``judge_stages``: which of the
    judge's stages run, in order — ``rederive`` (the judge model writes its own query for the
    question, ``judge_samples`` times, and its answer must agree with the candidate's:
    :mod:`components.certify.rederive`) and ``review`` (the two-stage review of the candidate's
    program and evidence); both by default. ``eval_questions``: a JSONL
    evaluation set for the leakage filter (relative paths are resolved against the domain YAML).
    ``bands``: ``{rate: [min, max]}`` for the funnel-rate checks (rates of :data:`FUNNEL_RATES`). ``fault_sample``:
    certified items per fault type in the accuracy report (0 skips it).
    """

    judge: str = "off"
    judge_model: str | None = None
    judge_backend: str = "transformers"
    judge_options: Mapping[str, Any] = field(default_factory=dict)
    judge_max_new_tokens: int = 256
    judge_stages: Sequence[str] = ("rederive", "review")
    judge_samples: int = 3
    eval_questions: str | None = None
    bands: Mapping[str, Sequence[float]] = field(default_factory=dict)
    fault_sample: int = 12
    seed: int = 0
    admit_partial_without_judge: bool = False

    def __post_init__(self) -> None:
        if self.judge not in JUDGE_MODES:
            raise ValueError(f"judge must be one of {JUDGE_MODES}, not {self.judge!r}")
        for rate, band in self.bands.items():
            if rate not in FUNNEL_RATES:
                raise ValueError(f"unknown funnel rate {rate!r}; known: {list(FUNNEL_RATES)}")
            if not (isinstance(band, (list, tuple)) and len(band) == 2 and 0 <= band[0] <= band[1] <= 1):
                raise ValueError(f"band for {rate} must be [min, max] with 0 <= min <= max <= 1, not {band!r}")
        if self.fault_sample < 0:
            raise ValueError("fault_sample must be >= 0")
        stages = tuple(self.judge_stages) if isinstance(self.judge_stages, (list, tuple)) else ()
        if not stages or any(s not in JUDGE_STAGES for s in stages) or len(set(stages)) != len(stages):
            raise ValueError(
                f"judge_stages must be a non-empty list of {list(JUDGE_STAGES)}, not {self.judge_stages!r}"
            )
        object.__setattr__(self, "judge_stages", stages)
        if type(self.judge_samples) is not int or self.judge_samples < 1:
            raise ValueError(f"judge_samples must be a positive integer, not {self.judge_samples!r}")
        if not isinstance(self.admit_partial_without_judge, bool):
            raise ValueError("admit_partial_without_judge must be true or false")

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None, base: Path | None = None) -> CertifyConfig:
        raw = checked_options(cls, raw, "certify")
        if isinstance(raw.get("judge"), bool):  # YAML 1.1 reads a bare on / off as a boolean
            raw["judge"] = "on" if raw["judge"] else "off"
        ev = raw.get("eval_questions")
        if ev and base is not None and not Path(ev).is_absolute():
            raw["eval_questions"] = str((base / ev).resolve())
        if "bands" in raw:
            raw["bands"] = {k: tuple(v) if isinstance(v, list) else v for k, v in dict(raw["bands"] or {}).items()}
        return cls(**raw)

    def judge_kwargs(self) -> dict[str, Any]:
        """The judge backend's options, ``judge_model`` as its ``model_dir`` (local backends;
        :data:`DEFAULT_JUDGE_MODEL` when neither names one)."""
        opts = dict(self.judge_options)
        if self.judge_backend != "openai":
            if self.judge_model is not None:
                opts["model_dir"] = self.judge_model
            opts.setdefault("model_dir", DEFAULT_JUDGE_MODEL)
        return opts

    def to_json(self) -> dict[str, Any]:
        out = {
            **asdict(self),
            "judge_options": dict(self.judge_options),
            "judge_stages": list(self.judge_stages),
            "bands": {k: list(v) for k, v in self.bands.items()},
        }
        if self.judge == "off":  # how an unused judge would run identifies nothing
            del out["judge_stages"], out["judge_samples"]
        return out


def certify_params(config: CertifyConfig) -> dict[str, Any]:
    """What identifies a certified dataset beyond its inputs: the config, the certification
    rules, the evaluation set's content (a changed evaluation set is a new dataset) and, with
    the judge on, what the judge's model is."""
    from components.llm.registry import model_identity

    ev = config.eval_questions
    eval_hash = hash_path(ev) if ev and Path(ev).is_file() else None
    judge = None
    if config.judge == "on":
        from components.llm.precision import dtype_name

        opts = config.judge_kwargs()
        precision = dtype_name(opts.get("dtype")) if config.judge_backend != "openai" else None
        judge = {**model_identity(opts.get("model_dir")), "precision": precision, "protocol": JUDGE_PROTOCOL}
    return {**config.to_json(), "rules": RULES_VERSION, "eval_questions_hash": eval_hash, "judge_identity": judge}


def admit(status: str, verdict: str, leaked: bool, config: CertifyConfig) -> bool:
    """The admission rule: certified (strict / partial) ∧ the judge accepts (when on) ∧ not
    leaked; with the judge off, partial items only with ``admit_partial_without_judge``.

    >>> admit("partial", "skipped", False, CertifyConfig()), admit("strict", "skipped", False, CertifyConfig())
    (False, True)
    """
    if status not in ADMITTED_STATUSES or leaked:
        return False
    if config.judge == "on":
        return verdict == "accept"
    return status == "strict" or config.admit_partial_without_judge


@dataclass
class CertifiedRun:
    rows: list[dict[str, Any]]
    accuracy: AccuracyReport | None
    leakage_report: dict[str, Any] | None
    wall_s: dict[str, float]
    judge_error: str | None = None
    reused: int = 0  # certificates carried over unchanged (incremental re-certification)

    @property
    def admitted(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["admitted"]]


Progress = Callable[[str, int, int], None]  # (stage, done, total)


def _row(
    cand: QACandidate,
    cert: Certificate,
    verdict: JudgeVerdict | None,
    config: CertifyConfig,
    leak: LeakageResult | None,
    schema: Any,
    reads: Sequence[str],
) -> dict[str, Any]:
    from components.quizzer.noisy import held_out

    certified = cert.status != "hard_failure"
    evaluation_only = held_out(cand)
    if not certified:
        verdict_name = "not_judged"
    elif config.judge != "on" or evaluation_only:
        verdict_name = "skipped"
    else:
        verdict_name = verdict.verdict if verdict is not None else "uncertain"
    leaked = bool(leak and leak.dropped)
    features = [features_json(e.get("query", ""), schema) for e in cand.evidence] if certified else []
    return {
        **cand.to_record(),
        "status": cert.status,
        "reasons": list(cert.reasons),
        "certificate_json": json.dumps(cert.to_json(), sort_keys=True, default=str),
        "verdict": verdict_name,
        "judge_json": json.dumps(verdict.to_json() if verdict else None, default=str),
        "leaked": leaked,
        "leakage_json": json.dumps(leak.to_json() if leak else None, default=str),
        "evidence_features_json": json.dumps(features, sort_keys=True, default=str),
        "reads_json": json.dumps(sorted(reads)),
        "admitted": not evaluation_only and admit(cert.status, verdict_name, leaked, config),
    }


def run_certification(
    candidates: Sequence[QACandidate],
    db_location: str,
    config: CertifyConfig,
    *,
    progress: Progress | None = None,
    reuse: Mapping[str, tuple[Mapping[str, Any], Sequence[str]]] | None = None,
    snapshot_claim: str | None = None,
    claim_current: bool = False,
) -> CertifiedRun:
    """Certify ``candidates`` against the graph at ``db_location`` (a fresh read-only
    connection), judge the certified ones (``config.judge == "on"``), run the leakage filter
    (``config.eval_questions``) and the fault-injection accuracy report; see the module
    docstring. Never raises for anything a candidate contains.

    The snapshot each candidate claims is ``meta["snapshot_fingerprint"]``; ``snapshot_claim``
    overrides it for all, and ``claim_current`` lets a candidate without a claim claim the graph
    it is certified on (external candidates, ``graphdojo certify``).

    ``reuse`` (:func:`~components.certify.incremental.reusable_certificates`) maps candidate
    keys to certificates that still hold on this graph: those candidates are not certified again
    (incremental re-certification); everything else is computed as usual."""
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph import open_backend

    wall: dict[str, float] = {}
    backend = open_backend(db_location)
    try:
        schema = backend.schema()
        path = ReadOnlyQueryPath(backend, schema=schema)
        current = backend.fingerprint()
        if snapshot_claim or claim_current:
            for c in candidates:
                c.meta["snapshot_fingerprint"] = snapshot_claim or c.meta.get("snapshot_fingerprint") or current
        n = len(candidates)
        done = [0]

        def tick(stage: str, total: int) -> Callable[[int], None]:
            done[0] = 0

            def step(k: int) -> None:
                done[0] += k
                if progress:
                    progress(stage, done[0], total)

            return step

        t0 = time.perf_counter()
        keep = {}
        if reuse:
            keys = [candidate_key(c.to_record()) for c in candidates]
            keep = {i: reuse[k] for i, k in enumerate(keys) if k in reuse}
        todo = [i for i in range(n) if i not in keep]
        step = tick("certify", n)
        if keep:
            step(len(keep))
        fresh = certify_many(
            [candidates[i] for i in todo], schema=schema, query_path=path, current_fingerprint=current, progress=step
        )
        certs: list[Certificate] = [None] * n  # type: ignore[list-item]
        reads: list[Sequence[str]] = [()] * n
        for i, cert in zip(todo, fresh, strict=True):
            certs[i], reads[i] = cert, sorted(candidate_reads(candidates[i].evidence, cert.forwarded))
        for i, (cert_json, read) in keep.items():
            certs[i], reads[i] = Certificate.from_json(cert_json), list(read)
        wall["certify"] = time.perf_counter() - t0

        verdicts: dict[int, JudgeVerdict] = {}
        judge_error = None
        from components.quizzer.noisy import held_out

        # a held-out (evaluation-only) candidate is never admitted, so the judge does not read it
        certified_idx = [i for i, c in enumerate(certs) if c.status != "hard_failure" and not held_out(candidates[i])]
        if config.judge == "on" and certified_idx:
            from components.llm import make_backend

            t0 = time.perf_counter()
            llm = make_backend(config.judge_backend, **config.judge_kwargs())
            try:
                rederiver = None
                if "rederive" in config.judge_stages:
                    rederiver = Rederiver(
                        llm,
                        path,
                        schema,
                        judge_examples(path, schema, seed=config.seed),
                        k=config.judge_samples,
                        seed=config.seed,
                    )
                judge = SemanticJudge(
                    llm,
                    max_new_tokens=config.judge_max_new_tokens,
                    seed=config.seed,
                    rederiver=rederiver,
                    review="review" in config.judge_stages,
                )
                steps: dict[str, Callable[[int], None]] = {}

                def judged(stage: str, k: int) -> None:
                    if stage not in steps:  # the stages run one after the other
                        steps[stage] = tick(f"judge: {stage}", len(certified_idx))
                    steps[stage](k)

                got = judge.judge([candidates[i] for i in certified_idx], progress=judged)
            finally:
                llm.close()
            verdicts = dict(zip(certified_idx, got, strict=True))
            judge_error = next((v.error for v in got if v.error), None)
            wall["judge"] = time.perf_counter() - t0

        leaks: dict[int, LeakageResult] = {}
        leakage_report = None
        if config.eval_questions:
            t0 = time.perf_counter()
            filt = LeakageFilter(load_eval_questions(config.eval_questions), lexicon=build_lexicon(path, schema))
            leaks = {i: filt.check(c) for i, c in enumerate(candidates)}
            by_where: Counter[str] = Counter()
            by_eval: Counter[str] = Counter()
            for res in leaks.values():
                by_where.update({w for _, _, w in res.matches})
                by_eval.update({q for _, q, _ in res.matches})
            leakage_report = {
                "eval_questions": config.eval_questions,
                "eval_items": len(filt.items),
                "leaked": sum(r.dropped for r in leaks.values()),
                "by_where": dict(by_where),
                "by_eval": dict(by_eval.most_common()),
            }
            wall["leakage"] = time.perf_counter() - t0

        rows = [
            _row(c, certs[i], verdicts.get(i), config, leaks.get(i), schema, reads[i]) for i, c in enumerate(candidates)
        ]

        accuracy = None
        pool = [c for c, cert in zip(candidates, certs, strict=True) if cert.status != "hard_failure"]
        if config.fault_sample > 0 and pool:
            t0 = time.perf_counter()
            strict_ids = {c.id for c, cert in zip(candidates, certs, strict=True) if cert.status == "strict"}
            accuracy = fault_accuracy(
                pool,
                schema=schema,
                query_path=path,
                fingerprint=current,
                per_fault=config.fault_sample,
                seed=config.seed,
                strict_ids=strict_ids,
                progress=tick("fault injection", len(pool) + config.fault_sample * len(FAULTS)),
            )
            wall["fault_injection"] = time.perf_counter() - t0
        return CertifiedRun(rows, accuracy, leakage_report, wall, judge_error, reused=len(keep))
    finally:
        backend.close()


# -- the layer -------------------------------------------------------------------------------


def build_certified_dataset(
    inputs: Mapping[str, Artifact], config: CertifyConfig, out_dir: Path, ctx: BuildContext
) -> Artifact:
    """The ``certified_dataset`` layer: :func:`run_certification` of the ``candidates`` input on
    the ``snapshot`` input, re-using the certificates of the layer's previous artifact that still
    hold (``ctx.previous``, :func:`~components.certify.incremental.previous_certificates`).
    Writes ``certified.parquet`` (every candidate), ``admitted.parquet`` and ``report.json``
    (accuracy, leakage, timings, judge error, reuse)."""
    from components.certify.incremental import previous_certificates
    from components.quizzer.run import TqdmProgress, read_candidates

    cands, snap = inputs["candidates"], inputs["snapshot"]
    parts = snap.summary.get("parts")
    reuse, since = previous_certificates(ctx.previous, certify_params(config), parts)
    bars = TqdmProgress(f"{ctx.domain} certification")
    try:
        run = run_certification(read_candidates(str(cands.path)), str(snap.path), config, progress=bars, reuse=reuse)
    finally:
        bars.close()
    ctx.log(
        f"incremental re-certification: {run.reused} of {len(run.rows)} certificates reused from {since}"
        if since
        else "full certification (no earlier run to build on)"
    )
    report = {
        "accuracy": run.accuracy.to_json() if run.accuracy else None,
        "leakage": run.leakage_report,
        "wall_s": run.wall_s,
        "judge_error": run.judge_error,
        "reused_certificates": run.reused,
        "reused_from": since,
    }
    table = write_certified(run.rows, out_dir / "certified.parquet")
    write_certified(run.admitted, out_dir / "admitted.parquet")
    (out_dir / "report.json").write_text(json.dumps(report, indent=2, default=str))
    n_admitted = sum(bool(r["admitted"]) for r in run.rows)
    return CERTIFIED_DATASET.artifact(
        inputs,
        config,
        ctx,
        path=table,
        counts={"candidates": len(run.rows), "admitted": n_admitted},
        summary={
            "funnel": funnel(run.rows),
            "funnel_by_source": funnel_by_source(run.rows),
            "rates": funnel_rates(run.rows),
            "snapshot_parts": parts,
            **report,
        },
    )


CERTIFIED_DATASET: Final = Layer("certified_dataset", build_certified_dataset, certify_params)


# -- the funnel ------------------------------------------------------------------------------


def _pool(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows that could train: all but a domain's held-out evaluation questions."""
    from components.quizzer.noisy import held_out

    return [r for r in rows if not held_out(r)]


def funnel(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, int]]:
    """Ordered ``(stage, count)``: candidates, hard failures by cause (``hard_failure:<reason>``),
    strict, partial, judge accept / reject / uncertain (or skipped), leakage drops, admitted — of
    the candidates that could train; a domain's held-out evaluation questions (never judged or
    admitted) are one last line, ``held_out:strict`` (how many of them certified strict)."""
    pool = _pool(rows)
    held = len(rows) - len(pool)
    strict_held = sum(r["status"] == "strict" for r in rows) - sum(r["status"] == "strict" for r in pool)
    rows = pool
    n = len(rows)
    status = Counter(r["status"] for r in rows)
    causes = Counter(
        r["reasons"][0] if r["reasons"] else "internal_error" for r in rows if r["status"] == "hard_failure"
    )
    out: list[tuple[str, int]] = [("candidates", n), ("hard_failure", status["hard_failure"])]
    out += [(f"hard_failure:{reason}", causes[reason]) for reason in REASONS if causes[reason]]
    out += [("strict", status["strict"]), ("partial", status["partial"])]
    certified = [r for r in rows if r["status"] != "hard_failure"]
    verdicts = Counter(r["verdict"] for r in certified)
    if verdicts.get("skipped"):  # judge off: the partial items are held back unless configured otherwise
        out.append(("judge:skipped", verdicts["skipped"]))
        out.append(
            (
                "judge_off:partial_held_back",
                sum(r["status"] == "partial" and not r["leaked"] and not r["admitted"] for r in certified),
            )
        )
    else:
        out += [(f"judge:{v}", verdicts[v]) for v in ("accept", "reject", "uncertain")]
    passed_judge = [r for r in certified if r["verdict"] in ("accept", "skipped")]
    out.append(("leakage_dropped", sum(bool(r["leaked"]) for r in passed_judge)))
    out.append(("admitted", sum(bool(r["admitted"]) for r in rows)))
    if held:
        out.append(("held_out:strict", strict_held))
    return out


def funnel_by_source(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The funnel per source of a noisy pool (:func:`components.quizzer.noisy.pool_label`): one
    row per ``(source, kind)`` with its candidates, hard failures, strict, partial, judge accept /
    reject / uncertain, leakage drops and admitted — what certification removed of each kind of
    noise and what it let through. A pool made without noise has one row per quizzer."""
    from components.quizzer.noisy import NOISE_SOURCES, pool_label

    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(pool_label(r), []).append(r)
    rank = {s: i for i, s in enumerate(NOISE_SOURCES)}
    out = []
    for (source, kind), part in sorted(groups.items(), key=lambda g: (rank.get(g[0][0], len(rank)), g[0][1])):
        status = Counter(r["status"] for r in part)
        verdict = Counter(r["verdict"] for r in part)
        out.append(
            {
                "source": source,
                "kind": kind,
                "candidates": len(part),
                "hard_failure": status["hard_failure"],
                "strict": status["strict"],
                "partial": status["partial"],
                **{f"judge_{v}": verdict[v] for v in ("accept", "reject", "uncertain", "skipped")},
                "leaked": sum(bool(r["leaked"]) for r in part),
                "admitted": sum(bool(r["admitted"]) for r in part),
            }
        )
    return out


def source_totals(by_source: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """:func:`funnel_by_source` rows summed per source: ``{source: {candidates, hard_failure,
    strict, partial, admitted}}`` in the order the rows come."""
    out: dict[str, dict[str, int]] = {}
    for r in by_source:
        total = out.setdefault(r["source"], dict.fromkeys(_TOTALS, 0))
        for key in _TOTALS:
            total[key] += int(r[key])
    return out


_TOTALS: Final = ("candidates", "hard_failure", "strict", "partial", "admitted")


def source_chart(by_source: Sequence[Mapping[str, Any]], width: int = 30) -> str:
    """Per source of a pool, its candidates as a bar: admitted (``█``) and removed (``░``) —
    a Markdown text chart beside :func:`funnel_chart`."""
    totals = source_totals(by_source)
    top = max((t["candidates"] for t in totals.values()), default=0) or 1
    lines = ["```text"]
    for source, t in totals.items():
        kept = round(width * t["admitted"] / top)
        removed = round(width * t["candidates"] / top) - kept
        lines.append(f"{source:<11} {'█' * kept}{'░' * removed} {t['admitted']} of {t['candidates']} admitted")
    lines.append("```")
    return "\n".join(lines)


def funnel_rates(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The :data:`FUNNEL_RATES` (over all candidates; judge accept over certified ones, counting
    ``skipped`` as accepted; leakage over all candidates) — of the candidates that could train,
    a domain's held-out evaluation questions left out."""
    rows = _pool(rows)
    n = max(len(rows), 1)
    certified = [r for r in rows if r["status"] != "hard_failure"]
    return {
        "certified_rate": len(certified) / n,
        "strict_rate": sum(r["status"] == "strict" for r in rows) / n,
        "hard_failure_rate": (len(rows) - len(certified)) / n,
        "admitted_rate": sum(bool(r["admitted"]) for r in rows) / n,
        "judge_accept_rate": sum(r["verdict"] in ("accept", "skipped") for r in certified) / max(len(certified), 1),
        "leakage_rate": sum(bool(r["leaked"]) for r in rows) / n,
    }


def funnel_chart(stages: Sequence[tuple[str, int]], width: int = 40) -> str:
    """The funnel as a Markdown bar chart (renders in the Dagster UI and any terminal)."""
    top = max((c for _, c in stages), default=0) or 1
    lines = ["```text"]
    for stage, count in stages:
        bar = "█" * round(width * count / top)
        indent = "  " if ":" in stage else ""
        lines.append(f"{indent + stage:<34} {bar} {count}")
    lines.append("```")
    return "\n".join(lines)


# -- storage ---------------------------------------------------------------------------------


def write_certified(rows: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """Parquet, atomically (temp file + rename)."""
    return write_parquet(rows, path)


def read_certified(path: str | Path) -> list[dict[str, Any]]:
    return read_parquet(path)
