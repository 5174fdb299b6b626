"""Running the pipeline from the command line (``graphdojo demo`` / ``materialize``): one
Dagster run per domain on the persistent instance, progress a person can read, and the full
Dagster event log in a file.

The console shows one line per asset when it starts and when it ends (name, seconds, its key
number: candidates, admitted, loss, answers …; replaced in place on a terminal), failing checks
as they happen, and per run a summary: what ran and was reused, checks, the certification
funnel, the evaluation headline with confidence intervals and where the HTML report is.
Everything else — Dagster's event log, library logging, warnings — goes to
``<data_root>/logs/<run id>.log``; ``verbose`` puts Dagster's event log back on the console.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import textwrap
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import dagster as dg

__all__ = [
    "LOG_DIR",
    "RunConsole",
    "RunOutcome",
    "dagster_home",
    "headline",
    "quiet_libraries",
    "run_selection",
    "step_names",
    "summary_lines",
]

LOG_DIR = "logs"


def dagster_home(data_root: Path) -> Path:
    """``$DAGSTER_HOME``, else ``<data_root>/dagster_home`` (set for this process), with telemetry
    off in a new instance."""
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(data_root / "dagster_home")))
    home.mkdir(parents=True, exist_ok=True)
    cfg = home / "dagster.yaml"
    if not cfg.exists():
        cfg.write_text("telemetry:\n  enabled: false\n")
    os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
    return home


def _num(value: Any, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else f"{value:,}"


def _trained(m: Mapping[str, Any]) -> str:
    if m.get("trained") is False:
        return "not trained (0 preference pairs)" if m.get("pairs") == 0 else "not trained"
    if "last_reward" in m:
        return f"reward {_num(m['last_reward'])}, loss {_num(m.get('last_loss'))}"
    return f"loss {_num(m.get('first_loss'))} → {_num(m.get('last_loss'))}"


#: asset name → its key number, from its materialization metadata
HEADLINES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "graph_snapshot": lambda m: f"{_num(m['nodes'])} nodes, {_num(m['relationships'])} relationships",
    "qa_candidates": lambda m: f"{_num(m['candidates'])} candidates ({_num(m['ok'])} ran)",
    "certified_dataset": lambda m: f"{_num(m['admitted'])} of {_num(m['candidates'])} admitted",
    "curriculum_splits": lambda m: f"{_num(m['items'])} items",
    "preference_pairs": lambda m: f"{_num(m['pairs'])} pairs from {_num(m['questions'])} questions",
    "ablations": lambda m: f"{_num(m['checkpoints'])} ablation checkpoints",
    "dancer_ablations": lambda m: f"{_num(m['checkpoints'])} GraphDancer ablation checkpoints",
    "tasks": lambda m: f"{_num(m['items'])} tasks",
    "eval_reports": lambda m: f"questions: {_num(m['questions'])}, answers: {_num(m['records'])}",
    "eval_report": lambda m: f"{_num(m['items'])} items, {_num(m['records'])} answers",
    "matrix": lambda m: f"{_num(m['cells'])} cells",
}


def headline(asset: str, metadata: Mapping[str, Any]) -> str:
    """The key number of a materialization of ``asset`` (plain metadata values)."""
    try:
        return HEADLINES.get(asset, _trained)(metadata)
    except (KeyError, TypeError, ValueError):
        return ""


def _plain(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {k: getattr(v, "value", v) for k, v in metadata.items()}


class _LogFile(io.TextIOBase):
    """The run's log file; a write that fails (a full disk) stops the logging, never the run."""

    def __init__(self, path: Path) -> None:
        self.path, self.failed = path, None
        self._fh: TextIO | None = path.open("a", encoding="utf-8", buffering=1)

    def write(self, text: str) -> int:
        if self._fh is not None:
            try:
                self._fh.write(text)
            except OSError as exc:
                self.failed, self._fh = exc, None
        return len(text)

    def flush(self) -> None:
        if self._fh is not None:
            try:
                self._fh.flush()
            except OSError as exc:
                self.failed, self._fh = exc, None

    def close(self) -> None:
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
            self._fh = None
        super().close()


def _format(entry: Any) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(entry.timestamp))
    event = entry.dagster_event.event_type_value if entry.dagster_event else "LOG"
    return f"{stamp} {logging.getLevelName(entry.level)} {entry.step_key or '-'} {event} {entry.message}\n"


@dataclass
class RunConsole:
    """A Dagster event listener that writes every event to ``log`` and the progress lines to
    ``stream``. ``steps`` maps the step keys of assets to their names (``domain/asset``)."""

    stream: TextIO
    log: TextIO
    steps: Mapping[str, str]
    started: dict[str, float] = field(default_factory=dict)
    headlines: dict[str, str] = field(default_factory=dict)
    reused: set[str] = field(default_factory=set)
    failed_checks: list[str] = field(default_factory=list)
    _pending: str | None = None  # the start line last written, when nothing followed it

    def _write(self, line: str, *, replaces_start: bool = False) -> None:
        if replaces_start and self._pending is not None and self.stream.isatty():
            self.stream.write("\x1b[1A\x1b[2K")
        self.stream.write(line + "\n")
        self.stream.flush()
        self._pending = None

    def __call__(self, entry: Any) -> None:
        self.log.write(_format(entry))
        self.log.flush()
        event = entry.dagster_event
        if event is None:
            return
        kind, name = event.event_type, self.steps.get(entry.step_key or "")
        if kind == dg.DagsterEventType.ASSET_MATERIALIZATION and name:
            meta = _plain(entry.asset_materialization.metadata)
            self.headlines[name] = headline(name.rsplit("/", 1)[-1], meta)
            if meta.get("reused"):
                self.reused.add(name)
        elif kind == dg.DagsterEventType.ASSET_CHECK_EVALUATION:
            check = entry.asset_check_evaluation
            if not check.passed:
                label = f"{check.asset_key.to_user_string()}:{check.check_name}"
                self.failed_checks.append(label)
                self._write(f"  ! check {label} failed")
        elif name and kind == dg.DagsterEventType.STEP_START:
            self.started[name] = entry.timestamp
            self._write(f"  … {name}")
            self._pending = name
        elif name and kind in (dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE):
            seconds = entry.timestamp - self.started.get(name, entry.timestamp)
            if kind == dg.DagsterEventType.STEP_SUCCESS:
                note = self.headlines.get(name, "") + ("  (reused)" if name in self.reused else "")
                self._write(f"  ✓ {name:<34} {seconds:7.1f} s  {note}".rstrip(), replaces_start=self._pending == name)
            else:
                self._write(f"  ✗ {name:<34} {seconds:7.1f} s  failed", replaces_start=self._pending == name)


@dataclass
class RunOutcome:
    """What one run did: its id, success, materialized asset names, check results, the errors
    of failed steps and the event log file."""

    run_id: str
    success: bool
    materialized: list[str]
    checks: dict[str, bool]
    errors: dict[str, str]
    log_file: Path
    seconds: float = 0.0
    reused: int = 0

    @property
    def ok(self) -> bool:
        return self.success and all(self.checks.values())


def _step_errors(result: Any) -> dict[str, str]:
    """``step → what went wrong`` for each failed step: what the step raised (a
    ``StorageError``'s advice, a ``Failure``'s description), not Dagster's wrapper."""
    out = {}
    for event in result.all_events:
        if not event.is_step_failure:
            continue
        data = event.event_specific_data
        user = getattr(data, "user_failure_data", None)
        err = data.error  # Dagster's wrapper; its cause is what the step raised
        raised = err.cause if err is not None and err.cause is not None else err
        message = raised.message.strip() if raised is not None else ""
        out[str(event.step_key)] = (user.description if user and user.description else message) or "failed"
    return out


@contextlib.contextmanager
def quiet_libraries(log: TextIO, verbose: bool) -> Iterator[None]:
    """Library chatter — logging, warnings, progress bars, anything printed — into ``log``
    instead of the console, unless ``verbose``."""
    if verbose:
        yield
        return
    handler = logging.StreamHandler(log)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    root.handlers, root.level = [handler], logging.INFO
    logging.captureWarnings(True)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    with contextlib.suppress(ImportError):
        import transformers

        transformers.utils.logging.disable_progress_bar()
        transformers.utils.logging.set_verbosity_error()
    with contextlib.suppress(ImportError):
        import datasets

        datasets.disable_progress_bars()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            warnings.simplefilter("default")
            yield
    finally:
        logging.captureWarnings(False)
        root.handlers, root.level = saved


def run_selection(
    job: dg.JobDefinition,
    instance: dg.DagsterInstance,
    asset_steps: Mapping[str, str],
    data_root: Path,
    *,
    verbose: bool = False,
    stream: TextIO = sys.stderr,
) -> RunOutcome:
    """Execute ``job`` in-process on ``instance`` with the progress console (module docstring)."""
    from dagster._core.utils import make_new_run_id

    from components.store.atomic import as_storage_error, make_dirs

    run_id = make_new_run_id()
    log_file = make_dirs(data_root / LOG_DIR) / f"{run_id}.log"
    run_config = {} if verbose else {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    t0 = time.monotonic()
    try:
        log = _LogFile(log_file)
    except OSError as exc:
        raise (as_storage_error(exc, log_file) or exc) from exc
    with contextlib.closing(log), quiet_libraries(log, verbose):
        console = RunConsole(stream, log, asset_steps)
        instance.add_event_listener(run_id, console)
        result = job.execute_in_process(run_config=run_config, instance=instance, raise_on_error=False, run_id=run_id)
    if log.failed is not None:
        stream.write(f"  (the event log stopped at a write error: {log.failed})\n")
    materialized = sorted("/".join(e.asset_key.path) for e in result.get_asset_materialization_events() if e.asset_key)
    checks = {f"{c.asset_key.to_user_string()}:{c.check_name}": c.passed for c in result.get_asset_check_evaluations()}
    return RunOutcome(
        run_id,
        result.success,
        materialized,
        checks,
        _step_errors(result),
        log_file,
        time.monotonic() - t0,
        len(console.reused),
    )


def step_names(keys: Sequence[dg.AssetKey]) -> dict[str, str]:
    """Step key (op name) → ``domain/asset`` for assets ``keys``."""
    return {"__".join(k.path): "/".join(k.path) for k in keys}


def _funnel(stages: Sequence[Sequence[Any]]) -> str:
    """The funnel on one line: main stages, hard-failure causes in parentheses."""
    causes = [f"{name.split(':', 1)[1]} {n}" for name, n in stages if name.startswith("hard_failure:")]
    parts = []
    for name, n in stages:
        if name.startswith("hard_failure:"):
            continue
        parts.append(f"{name} {n}" + (f" ({', '.join(causes)})" if name == "hard_failure" and causes else ""))
    return " → ".join(parts)


def _sources(by_source: Sequence[dict]) -> str:
    """A noisy pool's funnel by source on one line (empty for a pool without noise)."""
    from components.certify.dataset import source_totals

    totals = source_totals(by_source)
    if set(totals) <= {"template", "llm", "external"}:
        return ""
    parts = [f"{s} {t['admitted']}/{t['candidates']}" for s, t in totals.items()]
    return "admitted by source: " + ", ".join(parts)


def _artifact(instance: dg.DagsterInstance, store: Any, key: dg.AssetKey, run_id: str) -> Any:
    from assets.artifacts import lineage_fingerprint
    from components.store.artifact import Artifact

    found = lineage_fingerprint(instance, key, run_id)
    rec = store.catalog().get(*found) if found else None
    return Artifact.from_record(rec) if rec is not None else None


_TYPE_SHORT = {"boolean": "yes/no", "number": "num", "set": "set", "entity": "ent"}


def _by_type(rows: list[dict]) -> dict[str, str]:
    """``{system: "yes/no 12/19 (10) num 7/13 (7) …"}``: correct answers per answer type, and in
    brackets how many of them were grounded (read off the system's own query results)."""
    out: dict[str, list[str]] = {}
    for r in rows:
        text = f"{_TYPE_SHORT.get(r['answer_type'], r['answer_type'])} {r['correct'].replace(' ', '')}"
        records = r["correct"].rpartition("/")[2].strip()
        with contextlib.suppress(ValueError):  # "–" where a system has no grounding number
            text += f" ({round(float(r['grounded EM']) * int(records))})"
        out.setdefault(r["system"], []).append(text)
    return {k: " ".join(v) for k, v in out.items()}


def _baseline_lines(paired: list[dict], baselines: tuple[str, ...] = ("answer prior",)) -> list[str]:
    """One line per trained system: its EM non-bool difference with the answer prior and with
    the best off-the-shelf row (the pairs :func:`~components.evaluation.run.baseline_pairs`
    adds), from the summary's paired table."""
    by_system: dict[str, list[str]] = {}
    for r in paired:
        a, b = r["difference"].split(" − ", 1)
        if b in baselines or r.get("baseline"):
            by_system.setdefault(a, []).append(f"− {b} {r.get('EM non-bool', '–')}")
    return [f"    {a}: EM non-bool " + "; ".join(parts) for a, parts in by_system.items()]


def summary_lines(domain: str, outcome: RunOutcome, instance: dg.DagsterInstance, store: Any) -> list[str]:
    """The end-of-run summary: counts, checks, errors, the funnel, the evaluation headline (EM
    and F1 with 95 % CIs), the report and the event log."""
    passed = sum(outcome.checks.values())
    lines = [
        f"{domain}: {'ok' if outcome.ok else 'FAILED'} — {len(outcome.materialized)} assets "
        f"({outcome.reused} reused) in {outcome.seconds:.0f} s, checks {passed}/{len(outcome.checks)} passed"
    ]
    lines += [
        f"  error in {step}: {message.splitlines()[0] if message else 'failed'}"
        for step, message in outcome.errors.items()
    ]
    done = set(outcome.materialized)
    if f"{domain}/certified_dataset" in done:
        cert = _artifact(instance, store, dg.AssetKey([domain, "certified_dataset"]), outcome.run_id)
        if cert is not None:
            lines += textwrap.wrap(
                "funnel: " + _funnel(cert.summary["funnel"]), 110, initial_indent="  ", subsequent_indent="          "
            )
            sources = _sources(cert.summary.get("funnel_by_source") or [])
            if sources:
                lines += textwrap.wrap(sources, 110, initial_indent="  ", subsequent_indent="          ")
    for asset, rows_key, cols in (
        ("eval_reports", "systems", ("EM", "EM non-bool", "grounded EM")),
        ("eval_reports", "external_systems", ("EM", "EM non-bool", "grounded EM")),
        ("eval_report", "overview", ("accuracy (test)", "accuracy (OOD scenarios)")),
        ("matrix", "cells", ("em", "f1")),
    ):
        if f"{domain}/{asset}" not in done:
            continue
        art = _artifact(instance, store, dg.AssetKey([domain, asset]), outcome.run_id)
        if art is None:
            continue
        if not art.summary.get(rows_key):
            continue
        what = {"systems": " — test split", "external_systems": " — external questions"}.get(rows_key, "")
        lines.append(f"  {asset}{what} ({' / '.join(cols)}, 95 % CI):")
        type_key = {"systems": "by_answer_type", "external_systems": "external_by_answer_type"}.get(rows_key)
        by_type = _by_type(art.summary.get(type_key) or []) if type_key else {}
        idle = []  # rows without numbers (not trained / not evaluated): one line, the report says why
        for row in art.summary[rows_key]:
            label = row.get("system") or f"{row.get('train')} → {row.get('test')}"
            values = [str(row[c]) if not isinstance(row.get(c), float) else f"{row[c]:.3f}" for c in cols if c in row]
            if not values:
                idle.append(label)
                continue
            extra = f"   correct (grounded): {by_type[label]}" if label in by_type else ""
            lines.append(f"    {label:<28} " + "   ".join(values) + extra)
        if idle:
            lines.append(f"    no numbers (not trained or not evaluated; the report says why): {', '.join(idle)}")
        if rows_key == "systems":
            lines += _baseline_lines(art.summary.get("paired") or [])
        if rows_key != "systems" or "external_systems" not in art.summary:
            lines.append(f"  report: {art.file(art.summary['files']['html'])}")
    lines.append(f"  event log: {outcome.log_file}")
    return lines
