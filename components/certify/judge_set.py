"""A labelled set for measuring the semantic judge before it is trusted.

Built from **certified** items (every program check passed): each correct item, and copies of
items carrying one *semantic* fault that no program check can see — the program, its evidence
and the answer are untouched, only what the question says changes:

* ``question_swap`` — the question of another item with the same answer type;
* ``modifier_change`` — one modifier turned around (most ↔ fewest, highest ↔ lowest, largest ↔
  smallest, more ↔ fewer, before ↔ after, at most ↔ at least) or a number in the question changed;
* ``relation_change`` — the relation named in the question replaced by another relationship of
  the schema (``wrote`` → ``cites``);
* ``scope_change`` — the answer's scope changed (all ↔ some / one of: "Which are the papers …" →
  "Which is one of the papers …", "Are there any …" → "Are all …");
* ``hard_coded_computed`` — the final program prints the answer as a literal while still running
  and marking its evidence: the question still describes a computed value. (The certifier's
  data-flow check rejects these as ``hard_coded_answer`` before a judge would see them; they are
  in the set to measure the judge's own hard-coding check.)

A fault generator that does not apply to an item (no modifier to turn around, one relation in
the schema …) makes nothing for it; every item is made at most once per fault type. Items are
split into a **development** part (for prompt work) and a **test** part (what is reported) by a
stable hash of the source item's id, so a correct item and its faulty copies are on the same side.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from components.graph.schema import GraphSchema

__all__ = ["FAULTS", "JudgeItem", "build_judge_set", "split_of"]

FAULTS: Final = ("question_swap", "modifier_change", "relation_change", "scope_change", "hard_coded_computed")

#: word pairs a modifier change turns around (both directions), first match wins
_MODIFIERS: Final = (
    ("at most", "at least"),
    ("most", "fewest"),
    ("highest", "lowest"),
    ("largest", "smallest"),
    ("more", "fewer"),
    ("higher", "lower"),
    ("before", "after"),
    ("earliest", "latest"),
)

#: scope rewrites (regex → replacement), first match wins
_SCOPES: Final = (
    (r"^Which are the (\w+)", r"Which is one of the \1"),
    (r"^List the (\w+)", r"List one of the \1"),
    (r"^Are there any (\w+)", r"Are all \1"),
    (r"^Is there at least one of", "Are all of"),
    (r"^Which (\d+) of", r"Which one of"),
)


@dataclass(frozen=True)
class JudgeItem:
    """One labelled judge input: a candidate-like record and what a good judge says about it."""

    id: str
    source_id: str  # the certified item it was made from
    fault: str  # "correct" or one of FAULTS
    expected: str  # "accept" (correct) or "reject" (a fault)
    split: str  # "dev" or "test"
    question: str
    answer: str
    answer_type: str
    final_program: str
    evidence: list[dict[str, Any]]
    detail: str = ""  # what was changed

    def to_record(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "evidence": json.dumps(self.evidence, default=str)}


def split_of(source_id: str, test_share: float = 0.5) -> str:
    """``dev`` or ``test`` from a stable hash of the source item's id."""
    h = int(hashlib.blake2b(source_id.encode(), digest_size=4).hexdigest(), 16) / 0xFFFFFFFF
    return "test" if h < test_share else "dev"


def _relation_phrases(schema: GraphSchema) -> list[str]:
    """How relationship types read in a question (``PUBLISHED_IN`` → ``published in``)."""
    return [r.type.lower().replace("_", " ") for r in schema.rel_types]


def _forms(phrase: str) -> list[str]:
    """A relation phrase and its simple verb forms (``cites`` / ``cite``)."""
    out = [phrase]
    if phrase.endswith("s") and " " not in phrase:
        out.append(phrase[:-1])
    return out


def modifier_change(question: str) -> tuple[str, str] | None:
    """The question with one modifier turned around, and what changed (quoted names untouched:
    matches are found in the text with its quotes blanked, which keeps every position)."""
    bare = _without_quotes(question)
    for a, b in _MODIFIERS:
        for x, y in ((a, b), (b, a)):
            m = re.search(rf"\b{re.escape(x)}\b", bare)
            if m:
                return question[: m.start()] + y + question[m.end() :], f"{x} → {y}"
    m = re.search(r"\b(\d+)\b", bare)
    if m:
        n = int(m.group(1))
        new = str(n + 1 if n < 2 else n - 1)
        return question[: m.start()] + new + question[m.end() :], f"{n} → another number"
    return None


def _without_quotes(text: str) -> str:
    return re.sub(r'"[^"]*"', lambda m: " " * len(m.group(0)), text)


def relation_change(question: str, schema: GraphSchema) -> tuple[str, str] | None:
    """The question with its first relation phrase replaced by another relationship's."""
    phrases = _relation_phrases(schema)
    bare = _without_quotes(question)
    for i, phrase in enumerate(phrases):
        for form in _forms(phrase):
            m = re.search(rf"\b{re.escape(form)}\b", bare)
            if m:
                other = phrases[(i + 1) % len(phrases)]
                if other == phrase:
                    return None
                return question[: m.start()] + other + question[m.end() :], f"{form} → {other}"
    return None


def scope_change(question: str) -> tuple[str, str] | None:
    for pattern, repl in _SCOPES:
        new, n = re.subn(pattern, repl, question, count=1)
        if n:
            return new, f"{pattern} → {repl}"
    return None


def hard_coded(program: str, answer_value: Any) -> str | None:
    """The program with its printed answer replaced by a literal (its queries and marks kept)."""
    from components.certify.faults import replace_print

    return replace_print(program, repr(json.dumps(answer_value, ensure_ascii=False)))


def build_judge_set(
    candidates: Sequence[Any], schema: GraphSchema, *, per_fault: int | None = None, test_share: float = 0.5
) -> list[JudgeItem]:
    """Correct items and their faulty copies (module docstring) from certified ``candidates``
    (:class:`~components.quizzer.candidate.QACandidate` with ``ok`` and evidence). With
    ``per_fault``, at most that many items per fault type and as many correct ones."""
    items: list[JudgeItem] = []
    counts = {f: 0 for f in ("correct", *FAULTS)}
    by_type: dict[str, list[Any]] = {}
    for c in candidates:
        by_type.setdefault(c.answer_type, []).append(c)

    def add(c: Any, fault: str, question: str, program: str, detail: str = "") -> None:
        if per_fault is not None and counts[fault] >= per_fault:
            return
        counts[fault] += 1
        items.append(
            JudgeItem(
                id=f"{c.id}:{fault}",
                source_id=c.id,
                fault=fault,
                expected="accept" if fault == "correct" else "reject",
                split=split_of(c.id, test_share),
                question=question,
                answer=c.answer,
                answer_type=c.answer_type,
                final_program=program,
                evidence=list(c.evidence),
                detail=detail,
            )
        )

    for c in candidates:
        add(c, "correct", c.question, c.final_program)
        peers = [p for p in by_type[c.answer_type] if p.question != c.question]
        if peers:
            other = peers[int(hashlib.blake2b(c.id.encode(), digest_size=2).hexdigest(), 16) % len(peers)]
            add(c, "question_swap", other.question, c.final_program, f"question of {other.id}")
        for fault, made in (
            ("modifier_change", modifier_change(c.question)),
            ("relation_change", relation_change(c.question, schema)),
            ("scope_change", scope_change(c.question)),
        ):
            if made is not None and made[0] != c.question:
                add(c, fault, made[0], c.final_program, made[1])
        program = hard_coded(c.final_program, c.answer_value)
        if program is not None:
            add(c, "hard_coded_computed", c.question, program, "the printed answer is a literal")
    return items
