"""The certifier, measured: inject labelled faults into certified items and count what it catches.

:func:`fault_accuracy` takes certified candidates (strict or partial), makes faulty copies with
every injector of :data:`~components.certify.faults.FAULTS` (up to ``per_fault`` per type,
chosen with a seeded shuffle), certifies them together with the untouched items — the untouched
ones round-tripped through the dataset's record form first — and reports per fault type:

* ``outcome`` — what the certifier must say: ``hard_failure`` (the classic fault types and the
  hard-coded answers), ``partial`` (an answer selected from broader evidence, an arbitrary
  subset), or ``strict`` (a valid variant, e.g. a node-valued answer, that must not be rejected);
* ``injected`` — faulty copies made (a fault that does not apply to an item is skipped; the
  sandboxed kinds are made by running a modified final program, see
  :mod:`components.certify.faults`);
* ``hard_failures`` / ``partial`` / ``strict`` — how they were certified;
* ``recall`` — share with the expected outcome class: hard failures (any reason) for a hard
  kind, not strict for a partial kind, strict for a strict kind;
* ``reason_recall`` — share with the expected outcome *and* the expected reason (a variant
  refused by an earlier check for another reason does not count);
* ``precision`` — hard failures among this type's faulty copies divided by those plus the
  untouched items wrongly rejected (a conservative per-type precision: every false reject is
  charged to every fault type).

and overall the ``false_reject_rate`` (untouched certified items that fail on re-certification).
The snapshot fault edits nothing: its copies claim a snapshot fingerprint the graph does not
have (``"changed:" + fingerprint``), which is what a changed graph looks like to the certifier.
Thresholds are in :data:`THRESHOLDS`; :attr:`AccuracyReport.passed` applies them: recall ≥ 0.99
for every classic fault type (each injected at least once), ``reason_recall`` ≥ 0.99 for every
sandboxed kind that applied to at least one item, and false rejects ≤ 0.02.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from components.certify.certifier import certify_many
from components.certify.faults import FAULTS, SNAPSHOT_FAULT, inject, sandbox_runner
from components.graph.schema import GraphSchema
from components.quizzer.candidate import QACandidate
from components.tools.sandbox import SandboxLimits, SandboxServer

__all__ = ["THRESHOLDS", "AccuracyReport", "FaultStats", "fault_accuracy"]

THRESHOLDS: Final = {"recall": 0.99, "false_reject_rate": 0.02}


@dataclass
class FaultStats:
    fault: str
    expected: list[str]
    outcome: str = "hard_failure"
    sandboxed: bool = False
    injected: int = 0
    hard_failures: int = 0
    partial: int = 0
    strict: int = 0
    expected_reason: int = 0
    misses: list[dict[str, Any]] = field(default_factory=list)  # (id, status, reasons) of misses

    @property
    def recall(self) -> float | None:
        if not self.injected:
            return None
        hit = {"hard_failure": self.hard_failures, "partial": self.injected - self.strict, "strict": self.strict}[
            self.outcome
        ]
        return hit / self.injected

    @property
    def reason_recall(self) -> float | None:
        return self.expected_reason / self.injected if self.injected else None

    def precision(self, false_rejects: int) -> float | None:
        denom = self.hard_failures + false_rejects
        return self.hard_failures / denom if denom else None

    def to_json(self, false_rejects: int = 0) -> dict[str, Any]:
        return {
            "fault": self.fault,
            "outcome": self.outcome,
            "expected": self.expected,
            "injected": self.injected,
            "hard_failures": self.hard_failures,
            "partial": self.partial,
            "strict": self.strict,
            "recall": self.recall,
            "reason_recall": self.reason_recall,
            "precision": self.precision(false_rejects),
            "misses": self.misses[:5],
        }


@dataclass
class AccuracyReport:
    faults: dict[str, FaultStats]
    untouched: int
    false_rejects: int
    false_reject_examples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def false_reject_rate(self) -> float | None:
        return self.false_rejects / self.untouched if self.untouched else None

    @property
    def recall(self) -> float | None:
        """Over the hard-failure kinds: the share of their faulty copies refused."""
        hard = [f for f in self.faults.values() if f.outcome == "hard_failure"]
        n = sum(f.injected for f in hard)
        return sum(f.hard_failures for f in hard) / n if n else None

    @property
    def passed(self) -> bool:
        """Every classic fault type injected at least once with recall ≥ 0.99, every sandboxed
        kind that applied with reason_recall ≥ 0.99, and false rejects ≤ 0.02."""
        classic = [f for f in self.faults.values() if not f.sandboxed]
        sandboxed = [f for f in self.faults.values() if f.sandboxed and f.injected]
        if not self.untouched or any(f.injected == 0 for f in classic):
            return False
        return (
            all((f.recall or 0.0) >= THRESHOLDS["recall"] for f in classic)
            and all((f.reason_recall or 0.0) >= THRESHOLDS["recall"] for f in sandboxed)
            and (self.false_reject_rate or 0.0) <= THRESHOLDS["false_reject_rate"]
        )

    def table(self) -> list[dict[str, Any]]:
        return [f.to_json(self.false_rejects) for f in self.faults.values()]

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "recall": self.recall,
            "untouched": self.untouched,
            "false_rejects": self.false_rejects,
            "false_reject_rate": self.false_reject_rate,
            "false_reject_examples": self.false_reject_examples[:5],
            "thresholds": dict(THRESHOLDS),
            "faults": self.table(),
        }


def fault_accuracy(
    certified: Sequence[QACandidate],
    *,
    schema: GraphSchema,
    query_path: Any,
    fingerprint: str,
    per_fault: int = 12,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
    limits: SandboxLimits | None = None,
    strict_ids: set[str] | None = None,
) -> AccuracyReport:
    """Measure the certifier on ``certified`` items (see the module docstring). The partial and
    strict kinds are injected only into items in ``strict_ids`` (when given): their expected
    outcome assumes a strict original."""
    pool = [QACandidate.from_record(c.to_record()) for c in certified]  # the stored form
    for c in pool:
        c.meta["snapshot_fingerprint"] = fingerprint
    rng = random.Random(seed)
    order = list(range(len(pool)))
    rng.shuffle(order)
    batch: list[QACandidate] = list(pool)
    labels: list[str | None] = [None] * len(pool)
    with SandboxServer(limits or SandboxLimits()) as server:
        runner = sandbox_runner(query_path, schema, server)
        for name, spec in FAULTS.items():
            made = 0
            for i in order:
                if made >= per_fault:
                    break
                if spec.outcome != "hard_failure" and strict_ids is not None and pool[i].id not in strict_ids:
                    continue  # a partial / strict outcome is only meaningful from a strict original
                faulty = inject(name, pool[i], pool, schema, runner)
                if faulty is None:
                    continue
                if name == SNAPSHOT_FAULT:
                    faulty.meta["snapshot_fingerprint"] = f"changed:{fingerprint}"
                batch.append(faulty)
                labels.append(name)
                made += 1
    certs = certify_many(
        batch, schema=schema, query_path=query_path, current_fingerprint=fingerprint, progress=progress, limits=limits
    )
    stats = {name: FaultStats(name, sorted(f.expected), f.outcome, f.sandboxed) for name, f in FAULTS.items()}
    false_rejects, examples = 0, []
    for cand, label, cert in zip(batch, labels, certs, strict=True):
        if label is None:
            if cert.status == "hard_failure":
                false_rejects += 1
                examples.append({"id": cand.id, "reasons": cert.reasons})
            continue
        s = stats[label]
        s.injected += 1
        s.hard_failures += cert.status == "hard_failure"
        s.partial += cert.status == "partial"
        s.strict += cert.status == "strict"
        if FAULTS[label].caught(cert.status, cert.reasons):
            s.expected_reason += 1
        else:
            s.misses.append({"id": cand.id, "status": cert.status, "reasons": cert.reasons})
    return AccuracyReport(stats, len(pool), false_rejects, examples)
