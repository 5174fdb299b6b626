"""The semantic judge: re-derivation first (:mod:`components.certify.rederive`, when given a
:class:`~components.certify.rederive.Rederiver`), then the two-stage review, run by a local model through
:class:`~components.llm.base.GenerationBackend` — the same interface as the Quizzer, separate calls.

**What the judge sees** is built by :meth:`JudgeInput.from_candidate` and nothing else: the
question, the answer and its type, the supporting final program, a bounded preview of each
evidence result (columns, first rows, row count, truncated flag) and the normalised query
structure of each evidence query (:func:`components.cypher.features.derive`). It never sees the
exploration trace / dialogue, model reasoning, solver trajectories, the sampled axes, the
neighbourhood or the quizzer's meta.

**Stages** (one batched ``generate`` call per stage across all candidates):

1. *Semantic fidelity*: entities, modifiers, relation path and direction, quantifiers, answer
   scope, evidence completeness, hard-coding.
2. *Claim audit*: every claim of the question/answer checked against the evidence, and whether the
   question is specific enough to have exactly this answer.

Stage 2 is not asked when stage 1 rejects (``short_circuit=True``, the default): its verdict is
then ``"skipped"``, and the final verdict is ``reject`` anyway.

**Parsing**: each stage must end with ``VERDICT: accept|reject|uncertain``; the parser is case
and spacing tolerant, accepts markdown decoration (``**Verdict:** Accept``) and inflections
(``accepted``), and the **last** occurrence wins. No verdict line → ``uncertain``.

**Asking for the verdict**: a stage reply without any verdict line — in practice a small model's
reasoning cut at ``max_new_tokens`` — is continued once from ``VERDICT:`` (an assistant prefix, a
few greedy tokens; ``ask_verdict=True``, the default), so a judge that ran out of room still
decides instead of counting as ``uncertain``. The stages asked are listed in ``asked``.

**Combination**: the review's verdict is ``reject`` if either stage rejects, ``accept`` only if
both accept, otherwise ``uncertain`` (:func:`combine_verdicts`). With re-derivation on, it runs
first on every candidate; the review is asked only where re-derivation accepted
(``short_circuit``), and the final verdict is :func:`final_verdict` of the two: ``reject`` if
either rejects, ``accept`` only if both accept, else ``uncertain`` (a candidate no derivation
could answer is never accepted). ``review=False`` leaves re-derivation alone. A backend failure
makes every verdict of that call ``uncertain`` with ``error`` set.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from components.cypher.features import derive
from components.llm.base import ChatMessage, GenerationBackend, SamplingParams

__all__ = [
    "JUDGE_PROTOCOL",
    "JUDGE_VERDICTS",
    "JudgeInput",
    "JudgeVerdict",
    "SemanticJudge",
    "combine_verdicts",
    "final_verdict",
    "judge_messages",
    "parse_verdict",
]

JUDGE_VERDICTS: Final = ("accept", "reject", "uncertain")
#: what the judge asks and how (prompts, stages, the verdict follow-up): part of the certified
#: dataset's fingerprint when the judge is on, so a changed protocol re-judges
JUDGE_PROTOCOL: Final = 4  # 4: re-derivation repairs failed queries, readings the schema cannot hold vote
#: the assistant prefix a stage reply without a verdict line is continued from
VERDICT_PREFIX: Final = "\n\nVERDICT:"

_MAX_CELL_CHARS: Final = 200
_MAX_PROGRAM_CHARS: Final = 4000
_MAX_QUERY_CHARS: Final = 2000

_VERDICT_RE: Final = re.compile(r"verdict[\s*_:=\-\]\[>\"'`|]*(accept|reject|uncertain)[a-z]*", re.IGNORECASE)


def parse_verdict(text: str | None) -> str:
    """The last ``VERDICT: …`` in ``text`` (lower-cased); ``"uncertain"`` when there is none.

    >>> parse_verdict("... VERDICT: Reject\\nverdict : ACCEPT")
    'accept'
    >>> parse_verdict("**Verdict:** rejected"), parse_verdict("I accept."), parse_verdict(None)
    ('reject', 'uncertain', 'uncertain')
    """
    if not text:
        return "uncertain"
    found = _VERDICT_RE.findall(text)
    return found[-1].lower() if found else "uncertain"


def combine_verdicts(stage1: str, stage2: str) -> str:
    """``reject`` if either rejects; ``accept`` only if both accept; else ``uncertain``.

    >>> combine_verdicts("accept", "accept"), combine_verdicts("accept", "reject")
    ('accept', 'reject')
    >>> combine_verdicts("accept", "uncertain"), combine_verdicts("reject", "skipped")
    ('uncertain', 'reject')
    """
    if "reject" in (stage1, stage2):
        return "reject"
    if stage1 == "accept" and stage2 == "accept":
        return "accept"
    return "uncertain"


def final_verdict(rederive: str, review: str) -> str:
    """The judge's verdict from re-derivation's (``off`` when not run) and the review's (``off``
    when not run, ``skipped`` when not asked): ``reject`` if either rejects; ``accept`` only if
    every stage that ran accepts; otherwise ``uncertain``.

    >>> final_verdict("accept", "accept"), final_verdict("off", "accept"), final_verdict("accept", "off")
    ('accept', 'accept', 'accept')
    >>> final_verdict("uncertain", "skipped"), final_verdict("reject", "skipped"), final_verdict("off", "off")
    ('uncertain', 'reject', 'uncertain')
    """
    if "reject" in (rederive, review):
        return "reject"
    ran = [v for v in (rederive, review) if v != "off"]
    return "accept" if ran and all(v == "accept" for v in ran) else "uncertain"


def _cell(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _MAX_CELL_CHARS:
        return value[:_MAX_CELL_CHARS] + "…"
    if isinstance(value, (list, tuple)):
        return [_cell(v) for v in list(value)[:20]]
    if isinstance(value, dict):
        return {str(k): _cell(v) for k, v in list(value.items())[:20]}
    return value


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n… (truncated)"


@dataclass(frozen=True)
class JudgeInput:
    """Everything the judge is allowed to see about one candidate (see the module docstring)."""

    question: str
    answer: str
    answer_type: str
    program: str
    evidence: tuple[dict[str, Any], ...]  # {"id","query","params","columns","rows","row_count","truncated"}
    structure: tuple[dict[str, Any], ...]  # derive(query).to_json(), one per evidence item

    @classmethod
    def from_candidate(cls, candidate: Any, *, preview_rows: int = 5) -> JudgeInput:
        """Build the judge's input from a :class:`~components.quizzer.candidate.QACandidate`,
        reading only ``question``, ``answer``, ``answer_type``, ``final_program`` and
        ``evidence`` (a bounded preview of its first ``preview_rows`` rows)."""
        evidence, structure = [], []
        for item in getattr(candidate, "evidence", None) or []:
            if not isinstance(item, dict):
                continue
            query = item.get("query")
            rows = item.get("rows") or []
            row_count = item.get("row_count")
            evidence.append(
                {
                    "id": str(item.get("id", "")),
                    "query": _clip(query, _MAX_QUERY_CHARS) if isinstance(query, str) else query,
                    "params": _cell(dict(item.get("params") or {})),
                    "columns": list(item.get("columns") or []),
                    "rows": [
                        _cell(list(r) if isinstance(r, (list, tuple)) else r)
                        for r in list(rows)[: max(preview_rows, 0)]
                    ],
                    "row_count": row_count if isinstance(row_count, int) else len(rows),
                    "truncated": bool(item.get("truncated")),
                }
            )
            structure.append(
                derive(query).to_json()
                if isinstance(query, str)
                else {"ok": False, "code": "syntax_error", "message": "no query text"}
            )
        return cls(
            question=str(getattr(candidate, "question", "") or ""),
            answer=str(getattr(candidate, "answer", "") or ""),
            answer_type=str(getattr(candidate, "answer_type", "") or ""),
            program=_clip(str(getattr(candidate, "final_program", "") or ""), _MAX_PROGRAM_CHARS),
            evidence=tuple(evidence),
            structure=tuple(structure),
        )

    def render(self) -> str:
        """The input as the text block both stage prompts embed."""
        parts = [
            f"QUESTION: {self.question}",
            f"ANSWER ({self.answer_type or 'unknown type'}): {self.answer}",
            "SUPPORTING PROGRAM:\n```python\n" + self.program + "\n```",
        ]
        for i, (ev, st) in enumerate(zip(self.evidence, self.structure, strict=True), start=1):
            shown = len(ev["rows"])
            more = "" if shown >= ev["row_count"] else f" (showing first {shown})"
            trunc = " — TRUNCATED: the query hit its row limit, more rows exist" if ev["truncated"] else ""
            parts.append(
                f"EVIDENCE {i} [{ev['id']}]\n"
                f"query: {ev['query']}\n"
                f"params: {json.dumps(ev['params'], ensure_ascii=False, default=str)}\n"
                f"columns: {json.dumps(ev['columns'], ensure_ascii=False)}\n"
                f"rows: {ev['row_count']}{more}{trunc}\n"
                + "\n".join("  " + json.dumps(r, ensure_ascii=False, default=str) for r in ev["rows"])
                + f"\nstructure: {json.dumps(st, ensure_ascii=False, sort_keys=True, default=str)}"
            )
        if not self.evidence:
            parts.append("EVIDENCE: none")
        return "\n\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "answer_type": self.answer_type,
            "program": self.program,
            "evidence": list(self.evidence),
            "structure": list(self.structure),
        }


_SYSTEM: Final = (
    "You are a strict auditor of question/answer pairs generated from a property graph. "
    "You judge only from the material given. Finish with exactly one line "
    "'VERDICT: accept', 'VERDICT: reject' or 'VERDICT: uncertain'."
)

_STAGE1: Final = """Stage 1 — semantic fidelity. Check that the question means exactly what the evidence queries compute:
1. Entities: every entity named in the question is the one the queries are anchored on (ids/params).
2. Modifiers: every filter, condition, time range or property constraint in the question is in the query, and the query adds none the question omits.
3. Relation path: the relationships, their direction and the hop count match the question's wording.
4. Quantifiers: "all", "any", "at least", "exactly", "how many", superlatives match the aggregation, DISTINCT, ORDER and LIMIT.
5. Answer scope: the answer type and extent (one entity, a set, a number, yes/no) match what is asked.
6. Evidence completeness: the marked evidence contains everything the answer needs; a truncated result cannot support a full set or an exact count.
7. Hard-coding: the program computes the answer from the evidence instead of writing it in literally.

{input}

Give one short line per check, then the last line: VERDICT: accept | reject | uncertain"""

_STAGE2: Final = """Stage 2 — claim-by-claim audit. Split the question and the answer into atomic claims (each entity, relation, condition and the answer value itself). For each claim say SUPPORTED, UNSUPPORTED or CONTRADICTED by the evidence rows and queries shown. Then judge specificity: the question must be specific enough that the given answer is its only correct answer (no ambiguity, no vague reference, no unstated assumptions).
Reject if any claim is unsupported or contradicted, or the question is ambiguous; accept only if every claim is supported and the question is specific; otherwise uncertain.

{input}

List the claims, then the last line: VERDICT: accept | reject | uncertain"""


def judge_messages(inp: JudgeInput, stage: int) -> list[ChatMessage]:
    """The chat messages of ``stage`` (1 or 2) for one input."""
    if stage not in (1, 2):
        raise ValueError(f"stage must be 1 or 2, not {stage!r}")
    template = _STAGE1 if stage == 1 else _STAGE2
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": template.format(input=inp.render())}]


@dataclass
class JudgeVerdict:
    """The judge's outcome for one candidate."""

    verdict: str  # accept | reject | uncertain
    stage1: str  # accept | reject | uncertain | skipped (re-derivation did not accept) | off
    stage2: str  # accept | reject | uncertain | skipped | off
    stage1_text: str = ""
    stage2_text: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    asked: list[int] = field(default_factory=list)  # stages whose verdict was asked for (no verdict line)
    rederive: str = "off"  # re-derivation's verdict: accept | reject | uncertain | off
    rederivation: dict[str, Any] | None = None  # RederiveVerdict.to_json(): derivations, own answer

    @property
    def review(self) -> str:
        """The two-stage review's verdict (``off`` / ``skipped`` when it was not asked)."""
        if self.stage1 in ("off", "skipped"):
            return self.stage1
        return combine_verdicts(self.stage1, self.stage2)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "rederive": self.rederive,
            "rederivation": self.rederivation,
            "stage1": self.stage1,
            "stage2": self.stage2,
            "stage1_text": self.stage1_text,
            "stage2_text": self.stage2_text,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "error": self.error,
            "asked": list(self.asked),
        }


@dataclass
class SemanticJudge:
    """Runs the judge over a batch of candidates: ``judge(candidates) -> list[JudgeVerdict]``
    (input order): re-derivation first when ``rederiver`` is given, then the two-stage review
    (``review=True``; greedy decoding by default, ``temperature=0``)."""

    backend: GenerationBackend
    max_new_tokens: int = 384
    seed: int | None = 0
    temperature: float = 0.0
    preview_rows: int = 5
    short_circuit: bool = True
    ask_verdict: bool = True
    rederiver: Any = None  # a components.certify.rederive.Rederiver: the first stage
    review: bool = True
    _params: SamplingParams = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.rederiver is None and not self.review:
            raise ValueError("a judge needs re-derivation, the review or both")
        self._params = SamplingParams(
            max_new_tokens=self.max_new_tokens, temperature=self.temperature, seed=self.seed, n=1
        )

    def _generate(self, conversations: list[list[ChatMessage]], params: SamplingParams) -> list[tuple[str, int, int]]:
        out = self.backend.generate(conversations, params)
        if len(out) != len(conversations):
            raise ValueError(f"backend returned {len(out)} results for {len(conversations)} prompts")
        return [
            (g.text, g.prompt_tokens, g.completion_tokens) if g else ("", 0, 0)
            for g in (o[0] if o else None for o in out)
        ]

    def _run(
        self, inputs: Sequence[JudgeInput], stage: int
    ) -> tuple[list[tuple[str, int, int]], list[bool], str | None]:
        """Each input's stage reply (text, prompt and completion tokens), whether its verdict had
        to be asked for, and a backend error (then every reply is empty)."""
        if not inputs:
            return [], [], None
        asked = [False] * len(inputs)
        try:
            messages = [judge_messages(i, stage) for i in inputs]
            res = self._generate(messages, self._params)
            todo = [k for k, (text, _, _) in enumerate(res) if self.ask_verdict and not _VERDICT_RE.search(text)]
            follow = [
                [*messages[k], {"role": "assistant", "content": res[k][0].rstrip() + VERDICT_PREFIX}] for k in todo
            ]
            short = SamplingParams(max_new_tokens=4, temperature=0.0, seed=self.seed, n=1)
            for k, (more, p, c) in zip(todo, self._generate(follow, short) if todo else [], strict=True):
                text, p0, c0 = res[k]
                res[k], asked[k] = (text.rstrip() + VERDICT_PREFIX + more, p0 + p, c0 + c), True
            return res, asked, None
        except Exception as exc:  # noqa: BLE001 - a backend failure is an uncertain verdict
            return [("", 0, 0)] * len(inputs), asked, f"stage {stage}: {type(exc).__name__}: {exc}"[:2000]

    def judge(
        self, candidates: Sequence[Any], progress: Callable[[str, int], None] | None = None
    ) -> list[JudgeVerdict]:
        """One verdict per candidate. ``progress(stage, n)``: ``n`` more candidates are through
        ``stage`` ("re-derivation" after each chunk of questions, "review" when it ends)."""
        rederived = None
        if self.rederiver is not None:
            step = (lambda n: progress("re-derivation", n)) if progress is not None else None
            rederived = self.rederiver.rederive(candidates, progress=step)
        verdicts = [
            JudgeVerdict(
                "uncertain",
                "off",
                "off",
                rederive=rd.verdict if rd is not None else "off",
                rederivation=rd.to_json() if rd is not None else None,
                prompt_tokens=rd.prompt_tokens if rd is not None else 0,
                completion_tokens=rd.completion_tokens if rd is not None else 0,
                error=rd.error if rd is not None else None,
            )
            for rd in (rederived if rederived is not None else [None] * len(candidates))
        ]
        if self.review:
            asked_for = [
                i for i, v in enumerate(verdicts) if not (self.short_circuit and v.rederive in ("reject", "uncertain"))
            ]
            for i in set(range(len(verdicts))) - set(asked_for):
                verdicts[i].stage1 = verdicts[i].stage2 = "skipped"
            self._review([candidates[i] for i in asked_for], [verdicts[i] for i in asked_for])
            if progress is not None:
                progress("review", len(verdicts))
        for v in verdicts:
            v.verdict = final_verdict(v.rederive, v.review)
        return verdicts

    def _review(self, candidates: Sequence[Any], verdicts: Sequence[JudgeVerdict]) -> None:
        """The two stages over ``candidates``, written into their ``verdicts``."""
        inputs = [JudgeInput.from_candidate(c, preview_rows=self.preview_rows) for c in candidates]
        s1, asked1, err1 = self._run(inputs, 1)
        for v, (t, p, c), a in zip(verdicts, s1, asked1, strict=True):
            v.stage1, v.stage2, v.stage1_text = parse_verdict(t), "skipped", t
            v.prompt_tokens += p
            v.completion_tokens += c
            v.asked += [1] if a else []
            if err1:
                v.error = f"{v.error}; {err1}" if v.error else err1
        todo = [i for i, v in enumerate(verdicts) if not (self.short_circuit and v.stage1 == "reject")]
        s2, asked2, err2 = self._run([inputs[i] for i in todo], 2)
        for i, (t, p, c), a in zip(todo, s2, asked2, strict=True):
            v = verdicts[i]
            v.stage2, v.stage2_text = parse_verdict(t), t
            v.prompt_tokens += p
            v.completion_tokens += c
            v.asked += [2] if a else []
            if err2:
                v.error = f"{v.error}; {err2}" if v.error else err2
