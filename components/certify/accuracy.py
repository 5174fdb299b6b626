"""The certifier, measured: inject labelled faults into certified items and count what it catches.

:func:`fault_accuracy` takes certified candidates (strict or partial), makes faulty copies with
every injector of :data:`~components.certify.faults.FAULTS` (up to ``per_fault`` per type,
chosen with a seeded shuffle), certifies them together with the untouched items — the untouched
ones round-tripped through the dataset's record form first — and reports per fault type:

* ``injected`` — faulty copies made (a fault that does not apply to an item is skipped);
* ``recall`` — share of them that are hard failures (any reason);
* ``reason_recall`` — share that are hard failures *with the expected reason*;
* ``precision`` — hard failures among this type's faulty copies divided by those plus the
  untouched items wrongly rejected (a conservative per-type precision: every false reject is
  charged to every fault type).

and overall the ``false_reject_rate`` (untouched certified items that fail on re-certification).
The snapshot fault edits nothing: its copies claim a snapshot fingerprint the graph does not
have (``"changed:" + fingerprint``), which is what a changed graph looks like to the certifier.
Thresholds (issue: recall ≥ 0.99 per fault type, false rejects ≤ 0.02) are in
:data:`THRESHOLDS`; :attr:`AccuracyReport.passed` applies them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from components.certify.certifier import certify_many
from components.certify.faults import FAULTS, SNAPSHOT_FAULT, inject
from components.graph.schema import GraphSchema
from components.quizzer.candidate import QACandidate

__all__ = ["THRESHOLDS", "AccuracyReport", "FaultStats", "fault_accuracy"]

THRESHOLDS: Final = {"recall": 0.99, "false_reject_rate": 0.02}


@dataclass
class FaultStats:
    fault: str
    expected: list[str]
    injected: int = 0
    hard_failures: int = 0
    expected_reason: int = 0
    misses: list[dict[str, Any]] = field(default_factory=list)  # (id, status, reasons) of misses

    @property
    def recall(self) -> float | None:
        return self.hard_failures / self.injected if self.injected else None

    @property
    def reason_recall(self) -> float | None:
        return self.expected_reason / self.injected if self.injected else None

    def precision(self, false_rejects: int) -> float | None:
        denom = self.hard_failures + false_rejects
        return self.hard_failures / denom if denom else None

    def to_json(self, false_rejects: int = 0) -> dict[str, Any]:
        return {"fault": self.fault, "expected": self.expected, "injected": self.injected,
                "hard_failures": self.hard_failures, "recall": self.recall,
                "reason_recall": self.reason_recall, "precision": self.precision(false_rejects),
                "misses": self.misses[:5]}


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
        n = sum(f.injected for f in self.faults.values())
        return sum(f.hard_failures for f in self.faults.values()) / n if n else None

    @property
    def passed(self) -> bool:
        """Every fault type injected at least once with recall ≥ 0.99, and false rejects ≤ 0.02."""
        if not self.untouched or any(f.injected == 0 for f in self.faults.values()):
            return False
        return all((f.recall or 0.0) >= THRESHOLDS["recall"] for f in self.faults.values()) \
            and (self.false_reject_rate or 0.0) <= THRESHOLDS["false_reject_rate"]

    def table(self) -> list[dict[str, Any]]:
        return [f.to_json(self.false_rejects) for f in self.faults.values()]

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "recall": self.recall, "untouched": self.untouched,
                "false_rejects": self.false_rejects, "false_reject_rate": self.false_reject_rate,
                "false_reject_examples": self.false_reject_examples[:5], "thresholds": dict(THRESHOLDS),
                "faults": self.table()}


def fault_accuracy(
    certified: Sequence[QACandidate],
    *,
    schema: GraphSchema,
    query_path: Any,
    fingerprint: str,
    per_fault: int = 12,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> AccuracyReport:
    """Measure the certifier on ``certified`` items (see the module docstring)."""
    pool = [QACandidate.from_record(c.to_record()) for c in certified]  # the stored form
    for c in pool:
        c.meta["snapshot_fingerprint"] = fingerprint
    rng = random.Random(seed)
    order = list(range(len(pool)))
    rng.shuffle(order)
    batch: list[QACandidate] = list(pool)
    labels: list[str | None] = [None] * len(pool)
    for name in FAULTS:
        made = 0
        for i in order:
            if made >= per_fault:
                break
            faulty = inject(name, pool[i], pool, schema)
            if faulty is None:
                continue
            if name == SNAPSHOT_FAULT:
                faulty.meta["snapshot_fingerprint"] = f"changed:{fingerprint}"
            batch.append(faulty)
            labels.append(name)
            made += 1
    certs = certify_many(batch, schema=schema, query_path=query_path, current_fingerprint=fingerprint,
                         progress=progress)
    stats = {name: FaultStats(name, sorted(f.expected)) for name, f in FAULTS.items()}
    false_rejects, examples = 0, []
    for cand, label, cert in zip(batch, labels, certs, strict=True):
        if label is None:
            if cert.status == "hard_failure":
                false_rejects += 1
                examples.append({"id": cand.id, "reasons": cert.reasons})
            continue
        s = stats[label]
        s.injected += 1
        if cert.status == "hard_failure":
            s.hard_failures += 1
            if set(cert.reasons) <= set(s.expected):
                s.expected_reason += 1
        if cert.status != "hard_failure" or not set(cert.reasons) <= set(s.expected):
            s.misses.append({"id": cand.id, "status": cert.status, "reasons": cert.reasons})
    return AccuracyReport(stats, len(pool), false_rejects, examples)
