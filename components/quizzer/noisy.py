"""A noisy candidate pool: template candidates with a stated share of them replaced by the
mistakes a real Quizzer makes, so certification has something to remove — and the certification
ablation something to measure.

The template quizzer's candidates are correct by construction, so a pool of them certifies
almost entirely strict, and "certified" and "uncertified" training data are the same set. A
domain's ``quiz.noise`` (:class:`NoiseConfig`) replaces shares of the template candidates, each
at most once, by:

* ``hard`` — a fault variant from the certifier's own injector
  (:data:`components.certify.faults.FAULTS`), every kind whose expected outcome is a hard failure,
  taken in turn: evidence edits (forged, tampered, dropped, foreign), reversed directions, swapped
  and hard-coded answers, answers read from internal keys, a stale snapshot claim. Kinds that
  re-run a modified program in the sandbox carry genuine traces;
* ``partial`` — the injector's partial kinds (``broader_evidence``, ``arbitrary_limit``): a
  program that picks its answer out of broader evidence in Python, or a set answer cut by a
  ``LIMIT`` without an order. Only some candidates admit them (one evidence query anchored at a
  start node; a set answer), so fewer may be made than asked — the composition says how many;
* ``semantic`` — the question changed, program, evidence and answer untouched (the judge set's
  faults, :mod:`components.certify.judge_set`): another candidate's question of the same answer
  type whose answer differs, a modifier turned around, a relation changed, the answer's scope
  changed. Every program check passes; only a semantic judge can see them;
* ``paraphrase`` — the question rewritten in natural English by the quizzer's model
  (:mod:`components.quizzer.paraphrase`); a rewrite the meaning check **rejects** for a changed
  meaning (entities, numbers, modifiers, scope) replaces the question all the same — natural
  wording, changed meaning — and an accepted one replaces it as a natural paraphrase. A rewrite
  that is not a question at all (empty, the template text, the wrong form) leaves the candidate
  as it was.

The LLM Quizzer's candidates (``quiz.llm_n``) join the pool as they come. Every candidate gets
``meta["pool"] = {"source", "kind"}`` (``template`` / ``hard`` / ``partial`` / ``semantic`` /
``paraphrase`` / ``llm``) — a label for the funnel by source
(:func:`components.certify.dataset.funnel_by_source`); no check of the certifier or the judge
reads it. The curriculum does: an injected item that gets admitted (a changed question with the
judge off, say) trains but is never a validation or test question, since its gold answer is
wrong on purpose. Which candidates are replaced is decided by ``seed`` alone.

A domain's ``quiz.held_out_n`` adds clean template candidates of another seed after the pool,
labelled ``held_out`` (:func:`held_out`): they are the validation and test questions, so what a
measurement holds out does not depend on what certification or the judge admits, and a pool
item that shares a node with one of them trains nowhere (:mod:`components.curriculum.build`).

The paper's funnel for its own Quizzers: hard failures 14–21 %, partial ≈ 30 %
(``docs/certification.md``); a pool that imitates it sets ``hard`` ≈ 0.18 and ``partial`` ≈ 0.3.
"""

from __future__ import annotations

import copy
import hashlib
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from components.quizzer.candidate import QACandidate

__all__ = [
    "INJECTED",
    "MEANING_REASONS",
    "NOISE_SOURCES",
    "NoiseConfig",
    "held_out",
    "injected",
    "make_noisy",
    "pool_label",
]

#: the sources a pool's candidates come from, in report order (``held_out``: the clean
#: evaluation-only template candidates of ``quiz.held_out_n``, not part of the pool)
NOISE_SOURCES: Final = ("template", "hard", "partial", "semantic", "paraphrase", "llm", "held_out")
#: the sources a noisy pool injects (everything but the quizzers' own output)
INJECTED: Final = ("hard", "partial", "semantic", "paraphrase")
#: paraphrase rejections that change what the question asks (kept in a noisy pool)
MEANING_REASONS: Final = ("entities", "numbers", "modifiers", "scope")
SEMANTIC_KINDS: Final = ("question_swap", "modifier_change", "relation_change", "scope_change")


@dataclass(frozen=True)
class NoiseConfig:
    """Shares of the template candidates replaced (module docstring); all 0 by default (no
    noise). Each share is in [0, 1] and together they are at most 1."""

    hard: float = 0.0
    partial: float = 0.0
    semantic: float = 0.0
    paraphrase: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        shares = self.shares()
        for name, value in shares.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ValueError(f"quiz.noise.{name} must be a share between 0 and 1, not {value!r}")
        if sum(shares.values()) > 1 + 1e-9:
            raise ValueError(f"quiz.noise shares add up to {sum(shares.values()):.2f}; at most 1 can be replaced")
        if type(self.seed) is not int:
            raise ValueError(f"quiz.noise.seed must be an integer, not {self.seed!r}")

    def shares(self) -> dict[str, float]:
        return {k: v for k, v in asdict(self).items() if k != "seed"}

    @property
    def active(self) -> bool:
        return any(v > 0 for v in self.shares().values())


def pool_label(candidate: Any) -> tuple[str, str]:
    """``(source, kind)`` of a candidate of a pool (a candidate or a certified row); a
    candidate made without a noisy pool is labelled by its quizzer."""
    meta = candidate.meta if hasattr(candidate, "meta") else _meta_of(candidate)
    label = (meta or {}).get("pool") or {}
    quizzer = candidate.quizzer if hasattr(candidate, "quizzer") else candidate.get("quizzer")
    return str(label.get("source") or quizzer or "unknown"), str(label.get("kind") or quizzer or "unknown")


def injected(candidate: Any) -> bool:
    """Whether a candidate (or certified row) was injected by a noisy pool: its question, program
    or evidence was made wrong on purpose (or, for a paraphrase, may be), so it is never held out
    for evaluation (:func:`components.curriculum.build.build_curriculum`)."""
    return pool_label(candidate)[0] in INJECTED


def held_out(candidate: Any) -> bool:
    """Whether a candidate (or certified row) is one of a domain's clean held-out questions
    (``quiz.held_out_n``): evaluation only — never judged, admitted or trained on, and the only
    validation and test questions of its curriculum."""
    return pool_label(candidate)[0] == "held_out"


def _meta_of(row: Any) -> dict[str, Any]:
    import json

    raw = row.get("meta_json") if hasattr(row, "get") else None
    try:
        return json.loads(raw) if isinstance(raw, str) else dict(row.get("meta") or {})
    except ValueError:
        return {}


Make = Callable[[str, QACandidate], QACandidate | None]


def _replace(
    cands: list[QACandidate],
    order: list[int],
    taken: set[int],
    quota: int,
    source: str,
    kinds: Sequence[str],
    make: Make,
) -> Counter[str]:
    """Replace up to ``quota`` untaken candidates (in ``order``) by ``make(kind, candidate)``,
    the kinds taken in turn; a kind that does not apply to a candidate passes to the next."""
    made: Counter[str] = Counter()
    turn = 0
    for i in order:
        if sum(made.values()) >= quota:
            break
        if i in taken:
            continue
        for j in range(len(kinds)):
            kind = kinds[(turn + j) % len(kinds)]
            new = make(kind, cands[i])
            if new is not None:
                new.meta["pool"] = {"source": source, "kind": kind}
                cands[i] = new
                taken.add(i)
                made[kind] += 1
                turn += j + 1
                break
    return made


def _question_fault(kind: str, cand: QACandidate, peers: Sequence[QACandidate], schema: Any) -> QACandidate | None:
    from components.certify.judge_set import modifier_change, relation_change, scope_change
    from components.quizzer.answers import answers_agree

    if kind == "question_swap":
        others = [
            p
            for p in peers
            if p.answer_type == cand.answer_type
            and p.question != cand.question
            and not answers_agree(p.answer_value, cand.answer_value, cand.answer_type)
        ]
        if not others:
            return None
        pick = int(hashlib.blake2b(cand.id.encode(), digest_size=2).hexdigest(), 16) % len(others)
        made: tuple[str, str] | None = (others[pick].question, f"question of {others[pick].id}")
    elif kind == "modifier_change":
        made = modifier_change(cand.question)
    elif kind == "relation_change":
        made = relation_change(cand.question, schema)
    else:
        made = scope_change(cand.question)
    if made is None or made[0] == cand.question:
        return None
    out = copy.deepcopy(cand)
    out.question = made[0]
    out.meta["noise_detail"] = made[1]
    return out


def make_noisy(
    candidates: list[QACandidate],
    config: NoiseConfig,
    *,
    schema: Any,
    query_path: Any,
    fingerprint: str,
    llm: Any | None = None,
) -> dict[str, Any]:
    """Turn ``candidates`` (a quizzer run's, in place) into a noisy pool (module docstring) and
    label every candidate's source; returns the pool's composition: ``requested`` shares,
    ``made`` per source and kind, ``by_source`` counts and ``shares`` of the whole pool. The
    paraphrase share needs ``llm`` (a generation backend)."""
    from components.certify.faults import FAULTS, SNAPSHOT_FAULT, inject, sandbox_runner
    from components.tools.sandbox import SandboxLimits, SandboxServer

    if config.paraphrase > 0 and llm is None:
        raise ValueError("quiz.noise.paraphrase needs the quizzer's model (quiz.model) to rewrite questions")
    rng = random.Random(config.seed)
    pool_idx = [i for i, c in enumerate(candidates) if c.quizzer == "template" and c.ok]
    order = list(pool_idx)
    rng.shuffle(order)
    n = len(pool_idx)
    quotas = {k: round(v * n) for k, v in config.shares().items()}
    taken: set[int] = set()
    made: dict[str, Counter[str]] = {}
    originals = [copy.deepcopy(candidates[i]) for i in pool_idx]
    hard_kinds = [k for k, f in FAULTS.items() if f.outcome == "hard_failure"]
    partial_kinds = [k for k, f in FAULTS.items() if f.outcome == "partial"]

    with SandboxServer(SandboxLimits()) as server:
        runner = sandbox_runner(query_path, schema, server)

        def fault(kind: str, cand: QACandidate) -> QACandidate | None:
            out = inject(kind, cand, originals, schema, runner)
            if out is not None and kind == SNAPSHOT_FAULT:
                out.meta["snapshot_fingerprint"] = f"stale:{fingerprint}"
            return out

        # the scarce kinds first: the partial faults apply to few candidates
        made["partial"] = _replace(candidates, order, taken, quotas["partial"], "partial", partial_kinds, fault)
        made["semantic"] = _replace(
            candidates,
            order,
            taken,
            quotas["semantic"],
            "semantic",
            SEMANTIC_KINDS,
            lambda kind, c: _question_fault(kind, c, originals, schema),
        )
        made["hard"] = _replace(candidates, order, taken, quotas["hard"], "hard", hard_kinds, fault)
    made["paraphrase"] = _paraphrase(candidates, order, taken, quotas["paraphrase"], llm)
    for c in candidates:
        c.meta.setdefault("pool", {"source": "llm" if c.quizzer == "llm" else "template", "kind": c.quizzer})
    by_source = Counter(pool_label(c)[0] for c in candidates)
    total = max(len(candidates), 1)
    return {
        "requested": config.shares(),
        "seed": config.seed,
        "template_candidates": n,
        "made": {k: dict(v.most_common()) for k, v in made.items()},
        "by_source": {s: by_source[s] for s in NOISE_SOURCES if by_source[s]},
        "shares": {s: round(by_source[s] / total, 4) for s in NOISE_SOURCES if by_source[s]},
    }


def _paraphrase(
    cands: list[QACandidate], order: list[int], taken: set[int], quota: int, llm: Any | None
) -> Counter[str]:
    """Rewrite up to ``quota`` untaken candidates' questions with ``llm``: rejected for a changed
    meaning → the rewrite replaces the question (``rejected:<reason>``); accepted → it does too
    (``accepted``); any other rejection leaves the candidate untouched."""
    made: Counter[str] = Counter()
    if quota <= 0:
        return made
    from components.quizzer.paraphrase import paraphrase_candidates

    chosen = [i for i in order if i not in taken and not cands[i].meta.get("paraphrase")][:quota]
    work = [copy.deepcopy(cands[i]) for i in chosen]
    paraphrase_candidates(work, llm)
    for i, new in zip(chosen, work, strict=True):
        status = new.meta.get("paraphrase") or {}
        if status.get("status") == "accepted":
            kind = "accepted"
        elif status.get("reason") in MEANING_REASONS:
            kind = f"rejected:{status['reason']}"
            new.question = status["text"]
        else:
            continue
        new.meta["pool"] = {"source": "paraphrase", "kind": kind}
        cands[i] = new
        taken.add(i)
        made[kind] += 1
    return made
