"""The systems an evaluation compares, each answering the same questions with the same samples.

* :func:`tool_agent_records` — a model (base or trained checkpoint) playing a tool environment
  through the same :class:`~components.rollout.runner.RolloutRunner` as training: the Python +
  Cypher sandbox for the checkpoints, the Graph-CoT function API for the **zero-shot Graph-CoT**
  prompting baseline (the base model with Graph-CoT's prompt and few-shot examples).
* :func:`graphrag_records` — the **GraphRAG** baseline: retrieve the question's entities
  (``RetrieveNode``'s embedding index), linearise their 2-hop neighbourhood (``NeighborCheck``
  over every schema neighbour type, at most ``max_neighbours`` per hop) into one prompt, answer
  in one generation. EH: the gold answer occurs in that context.
* :class:`LLMJudge` — Graph-CoT's GPT4Score idea with a local model: "is the prediction
  correct? yes / no" given question, gold and prediction — both as the typed scoring's canonical
  texts (:func:`~components.rubric.metrics.canonical_text`; greedy, the verdict is the first word).

Latency per question is the wall time of the batched run divided by its questions (batched
generation has no per-question wall time); tokens are the model's own generated tokens.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.evaluation.metrics import EvalRecord, cut_transcript
from components.graph.errors import GraphError
from components.llm.base import SamplingParams
from components.options import checked_options
from components.rollout.runner import RolloutConfig, RolloutRunner, evidence_hit
from components.rubric.metrics import canonical_text, infer_answer_type
from components.rubric.rewards import extract_answer
from components.tools.graph_cot import _CallFailed

__all__ = [
    "EvalConfig",
    "LLMJudge",
    "answer_prior",
    "answer_prior_records",
    "closed_book_records",
    "graphrag_context",
    "graphrag_records",
    "tool_agent_records",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalConfig:
    """Decoding and budgets shared by every system of one report. Sampling (not greedy), GraphDancer's
    evaluation setting (temperature 0.7, top-p 0.8): each question is answered ``samples`` times
    with independent random streams of the run seeded by ``seed`` — the "seeds" the confidence
    intervals are over. The samples of all questions are generated in one batch (on a CPU, one
    batch of 18 sequences decodes far faster than three of 6)."""

    samples: int = 3
    seed: int = 0
    temperature: float = 0.7
    top_p: float = 0.8
    max_turns: int = 3
    max_new_tokens: int = 96
    max_questions: int = 12
    threads: int | None = None
    #: the LLM judge: a registered model name (components/llm/registry.py) or a local Hugging Face
    #: folder; None: SmolLM2-135M-Instruct
    judge_model: str | None = None
    grit_per_split: int = 6  # GRIT-style items per split (test, ood, large) in grit/eval_report
    few_shot: int = 2  # worked examples (training split) in the few-shot base model's prompt; 0: no such row
    #: the local LLM judge (the ``judge`` metric); off: no judge score in the report
    judge: bool = True
    #: an external question file (JSONL / CSV, gold answers or gold Cypher:
    #: components/evaluation/gold_cypher.py) evaluated instead of the test split
    questions: str | None = None
    #: a system trained by a ``mechanics_only`` stage (the tiny random model: it proves the stage
    #: and the evaluation run, not that anything learns) answers only this many questions, once
    mechanics_questions: int = 8
    #: the precision models compute in: ``auto`` (bfloat16 where the hardware multiplies it
    #: natively, else float32; components/llm/precision.py), ``float32`` or ``bfloat16``
    precision: str = "auto"
    #: the systems to run (report names, e.g. ``[sft-only, graphcert-grpo]``); None: every one.
    #: Others are listed in the report as not evaluated.
    systems: tuple[str, ...] | None = None
    #: out-of-distribution questions (components/evaluation/ood.py: recommendation-style, a
    #: reference answer by a stated rule) evaluated only — never trained on — and reported apart
    #: (ROUGE-L and the judge against the reference); 0: none
    ood_questions: int = 0
    #: the domain's externally written questions (JSONL / CSV with gold Cypher or answers), the
    #: report's second section beside the test split; evaluation-only (nothing trains on them)
    external: str | None = None
    #: evaluate only the first this many scorable external questions (file order); 0: all
    external_questions: int = 0
    #: off-the-shelf models (registered names) evaluated few-shot with the same tools, worked
    #: examples and turn budget as the trained rows: "<name> few-shot" rows
    offshelf: tuple[str, ...] = ()
    #: the sections the off-the-shelf rows answer (they are the slowest rows on a CPU)
    offshelf_sections: tuple[str, ...] = ("test", "external")
    #: the "answer prior" (no model) and "closed book" (the SFT Solver without tools) rows
    baselines: bool = True

    def __post_init__(self) -> None:
        if self.few_shot < 0 or self.ood_questions < 0 or self.external_questions < 0:
            raise ValueError("few_shot, ood_questions and external_questions must be >= 0")
        for name in ("offshelf", "offshelf_sections"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{name} must be a list of names")
            object.__setattr__(self, name, tuple(value))
        if set(self.offshelf_sections) - {"test", "external"}:
            raise ValueError("offshelf_sections takes 'test' and / or 'external'")
        if self.offshelf:
            from components.llm.registry import MODEL_NAMES

            unknown = set(self.offshelf) - set(MODEL_NAMES)
            if unknown:
                raise ValueError(f"offshelf names unknown models {sorted(unknown)}; registered: {list(MODEL_NAMES)}")
        from components.llm.precision import resolve_precision

        resolve_precision(self.precision)  # unknown names fail here, not after the first system
        if self.systems is not None:
            if isinstance(self.systems, str) or not all(isinstance(s, str) for s in self.systems):
                raise ValueError("systems must be a list of system names")
            object.__setattr__(self, "systems", tuple(self.systems))
        if min(self.samples, self.max_turns, self.max_new_tokens, self.max_questions, self.grit_per_split) < 1:
            raise ValueError("samples, max_turns, max_new_tokens, max_questions and grit_per_split must be >= 1")
        if self.mechanics_questions < 1:
            raise ValueError("mechanics_questions must be >= 1")

    @property
    def seeds(self) -> tuple[int, ...]:
        """The sample indices records carry as their ``seed``."""
        return tuple(range(self.samples))

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None, base: Any = None) -> EvalConfig:
        """A domain YAML's ``eval:`` section; unknown keys are an error; a relative ``questions``
        path is resolved against ``base`` (the YAML's folder)."""
        from pathlib import Path

        raw = checked_options(cls, raw, "eval")
        for key in ("questions", "external"):
            if raw.get(key) and base is not None and not Path(raw[key]).is_absolute():
                raw[key] = str((Path(base) / raw[key]).resolve())
        return cls(**raw)


def _record(system: str, seed: int, row: Mapping[str, Any], **kw: Any) -> EvalRecord:
    return EvalRecord(
        system=system,
        seed=seed,
        question_id=str(row.get("id")),
        question=str(row["question"]),
        gold=row["answer"],
        answer_type=row.get("answer_type"),
        level=row.get("level"),
        qtype=row.get("qtype") or row.get("answer_type"),
        section=str(row.get("section") or "test"),
        family=row.get("family"),
        **kw,
    )


def tool_agent_records(
    system: str,
    backend: Any,
    make_env: Callable[[], Any],
    rows: Sequence[Mapping[str, Any]],
    config: EvalConfig,
    *,
    stops: Sequence[str],
    system_prompt: str | None = None,
) -> list[EvalRecord]:
    """One record per (seed, row): ``backend`` (a token-level backend) plays ``make_env()``."""
    episode_rows = [
        {"question": r["question"], "answer": r["answer"], "answer_type": r.get("answer_type")} for r in rows
    ]
    runner = RolloutRunner(
        backend,
        make_env,
        RolloutConfig(
            max_turns=config.max_turns,
            max_new_tokens=config.max_new_tokens,
            temperature=config.temperature,
            top_p=config.top_p,
            seed=config.seed,
            stops=tuple(stops),
            system_prompt=system_prompt,
        ),
    )
    t0 = time.perf_counter()
    records = runner.run(episode_rows, n=config.samples)  # row-major: row 0's samples, then row 1's …
    latency = (time.perf_counter() - t0) / max(1, len(records))
    out = []
    for k, rec in enumerate(records):
        row, sample, s = rows[k // config.samples], k % config.samples, rec.stats
        out.append(
            _record(
                system,
                sample,
                row,
                answer=s.answer,
                valid_format=s.valid_format,
                valid_calls=s.valid_calls,
                halted=s.halted,
                truncated=s.truncated,
                evidence_hit=s.evidence_hit,
                tokens=s.model_tokens,
                latency_s=latency,
                answer_in_results=s.answer_in_results,
                transcript=cut_transcript(rec.completion_text),
            )
        )
    return out


def graphrag_context(
    api: Any, question: str, *, hops: int = 2, max_neighbours: int = 5, max_chars: int = 3000
) -> tuple[str, list[str]]:
    """``(context, node ids)``: the retrieved entities' observation, then each hop's
    ``NeighborCheck`` observations, cut at ``max_chars``."""
    retrieved = api.retrieve_node(question)
    lines = [retrieved.observation]
    frontier, seen = list(retrieved.node_ids), set(retrieved.node_ids)
    neighbour_types: dict[str, set[str]] = {}
    for s, _rel, t in api.schema.triples():
        neighbour_types.setdefault(s, set()).add(t)
        neighbour_types.setdefault(t, set()).add(s)
    for _ in range(hops):
        nxt: list[str] = []
        for node_id in frontier:
            try:
                label = api.resolve_node(node_id).label
            except _CallFailed as exc:  # an id the index returned but the graph no longer resolves
                log.debug("graphrag context: skipping node %r: %s", node_id, exc)
                continue
            except GraphError as exc:  # the lookup query failed: skip the node, but say so
                log.warning("graphrag context: skipping node %r, its lookup failed: %s", node_id, exc)
                continue
            for other in sorted(neighbour_types.get(label, ())):
                call = api.neighbor_check(node_id, other)
                if call.ok:
                    lines.append(call.observation)
                    nxt += [n for n in call.node_ids if n not in seen][:max_neighbours]
                    seen.update(call.node_ids)
        frontier = nxt[: max_neighbours * 2]
    context = "\n".join(lines)
    return context[:max_chars], sorted(seen)


_RAG_PROMPT = """Answer the question using the graph facts below. Give only the final answer inside <answer>...</answer>.

Graph facts:
{context}

Question: {question}"""

_CLOSED_BOOK_PROMPT = """Answer the question. You have no tools and no graph: answer from what you know. \
Give only the final answer inside <answer>...</answer>.

Question: {question}"""


def _one_prompt_records(
    llm: Any,
    rows: Sequence[Mapping[str, Any]],
    prompts: Sequence[str],
    config: EvalConfig,
    *,
    system: str,
    hits: Sequence[bool | None],
) -> list[EvalRecord]:
    """One generation per (row, sample) from one user prompt per row; the answer is the
    ``<answer>`` block."""
    t0 = time.perf_counter()
    gens = llm.generate(
        [[{"role": "user", "content": p}] for p in prompts],
        SamplingParams(
            max_new_tokens=config.max_new_tokens,
            temperature=config.temperature,
            top_p=config.top_p,
            stop=("</answer>",),
            seed=config.seed,
            n=config.samples,
        ),
    )
    latency = (time.perf_counter() - t0) / max(1, len(rows) * config.samples)
    out = []
    for row, hit, samples in zip(rows, hits, gens, strict=True):
        for sample, g in enumerate(samples):
            text = g.text + ("</answer>" if g.stop_reason == "</answer>" else "")
            answer = extract_answer(text)
            out.append(
                _record(
                    system,
                    sample,
                    row,
                    answer=answer,
                    valid_format=answer is not None,
                    valid_calls=0,
                    truncated=g.stop_reason == "length" and answer is None,
                    evidence_hit=hit,
                    tokens=g.completion_tokens,
                    latency_s=latency,
                    transcript=cut_transcript(text),
                )
            )
    return out


def graphrag_records(
    llm: Any, api: Any, rows: Sequence[Mapping[str, Any]], config: EvalConfig, *, system: str = "graphrag"
) -> list[EvalRecord]:
    """The GraphRAG baseline (module docstring); ``llm`` is a chat backend (``generate``)."""
    contexts = [graphrag_context(api, str(r["question"]))[0] for r in rows]
    prompts = [_RAG_PROMPT.format(context=c, question=r["question"]) for c, r in zip(contexts, rows, strict=True)]
    hits = [evidence_hit(r["answer"], [c], r.get("answer_type")) for c, r in zip(contexts, rows, strict=True)]
    return _one_prompt_records(llm, rows, prompts, config, system=system, hits=hits)


def closed_book_records(
    llm: Any, rows: Sequence[Mapping[str, Any]], config: EvalConfig, *, system: str = "closed book"
) -> list[EvalRecord]:
    """The **closed-book** baseline: the model answers the bare question, no tools, no graph
    (what the trained Solver knows without reading — a gain it shares is not the graph's)."""
    prompts = [_CLOSED_BOOK_PROMPT.format(question=r["question"]) for r in rows]
    return _one_prompt_records(llm, rows, prompts, config, system=system, hits=[None] * len(rows))


def answer_prior(train_rows: Sequence[Mapping[str, Any]]) -> Callable[[Mapping[str, Any]], str | None]:
    """The **answer prior**: a question is answered with the most common training answer of its
    (template family, answer type), falling back to the most common of its answer type; ties go
    to the answer whose canonical text sorts first; a row without an answer type takes the one its
    gold answer implies (:func:`~components.rubric.metrics.infer_answer_type` — for external
    questions, the gold result's shape). Answers are counted by their canonical text
    (:func:`~components.rubric.metrics.canonical_text`, so ``True`` and ``"yes"`` are one answer).
    No model, no graph: what a question's form alone predicts."""
    from collections import Counter

    by_family: dict[tuple[str, str], Counter[str]] = {}
    by_type: dict[str, Counter[str]] = {}

    def kind_of(r: Mapping[str, Any]) -> str:
        return str(r.get("answer_type") or infer_answer_type(r.get("answer")))

    for r in train_rows:
        kind = kind_of(r)
        text = canonical_text(r.get("answer"), kind or None)
        if not text:
            continue
        by_family.setdefault((str(r.get("family") or ""), kind), Counter())[text] += 1
        by_type.setdefault(kind, Counter())[text] += 1

    def most_common(counts: Counter[str] | None) -> str | None:
        if not counts:
            return None
        top = max(counts.values())
        return min(t for t, c in counts.items() if c == top)

    def answer(row: Mapping[str, Any]) -> str | None:
        kind = kind_of(row)
        return most_common(by_family.get((str(row.get("family") or ""), kind))) or most_common(by_type.get(kind))

    return answer


def answer_prior_records(
    rows: Sequence[Mapping[str, Any]],
    train_rows: Sequence[Mapping[str, Any]],
    config: EvalConfig,
    *,
    system: str = "answer prior",
) -> list[EvalRecord]:
    """One record per (sample, row) with :func:`answer_prior`'s answer (the same answer in every
    sample: the prior is deterministic; records per sample keep every row's shape alike)."""
    prior = answer_prior(train_rows)
    out = []
    for row in rows:
        guess = prior(row)
        for sample in range(config.samples):
            out.append(_record(system, sample, row, answer=guess, valid_format=guess is not None))
    return out


_JUDGE_PROMPT = """Question: {question}
Gold answer: {gold}
Predicted answer: {prediction}
Is the predicted answer correct (same meaning as the gold answer)? Reply with one word: yes or no."""
_YES_NO = re.compile(r"\b(yes|no)\b", re.I)


class LLMJudge:
    """A local yes/no correctness judge (``model_name`` is recorded in the report)."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.model_name = str(getattr(llm, "model_name", "unknown"))

    def judge(self, records: Sequence[EvalRecord]) -> None:
        """Fill ``record.judge`` in place: ``True``/``False``; an unanswered record is ``False``
        without asking; an unparseable verdict counts as ``False``."""
        todo = [r for r in records if r.answer is not None]
        for r in records:
            if r.answer is None:
                r.judge = False
        if not todo:
            return
        prompts = [
            [
                {
                    "role": "user",
                    "content": _JUDGE_PROMPT.format(
                        question=r.question,
                        gold=canonical_text(r.gold, r.answer_type),
                        prediction=canonical_text(r.answer, r.answer_type),
                    ),
                }
            ]
            for r in todo
        ]
        gens = self.llm.generate(prompts, SamplingParams(max_new_tokens=4, temperature=0.0, seed=0))
        for r, (g,) in zip(todo, gens, strict=True):
            m = _YES_NO.search(g.text)
            r.judge = bool(m and m.group(1).lower() == "yes")
