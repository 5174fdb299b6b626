"""Multi-turn rollouts: any tool environment (docs/tools.md, "One episode interface") + any
token-level generation backend → :class:`RolloutRecord` with a loss mask.

A rollout is **one token sequence**. The prompt is the chat-templated task (system + user, with
the generation prompt); after it, the model's own tokens and the environment's inserted tokens
alternate inside the one assistant turn, GraphDancer-style::

    prompt_ids                      completion_ids
    ┌──────────────────────────┐    ┌────────────────┬───────────────────────┬────────────────┬─────┐
    │ <system> … <user> task … │    │ <think>…</think│ \\n\\n<information>…    │ <think>…</think│ …   │
    │ <assistant>              │    │ <graph>F[x]    │ </information>\\n\\n    │ <answer>…      │     │
    │                          │    │ </graph>       │                       │ </answer>      │     │
    └──────────────────────────┘    └────────────────┴───────────────────────┴────────────────┴─────┘
    loss_mask (over completion):          1 … 1        0 … … … … … … … … 0        1 … 1

``loss_mask`` is 1 on every token the model generated and 0 on every token the environment
inserted (the ``<information>`` blocks), so no policy loss ever trains the model to *write* tool
results. The model always continues from the exact ids of the trajectory so far
(``generate_ids``), never from re-tokenised text, so the ids trained on are the ids sampled.

Generation stops at ``</graph>`` or ``</answer>`` (``CODE_STOPS`` for Python + Cypher steps: the
closing fence; the stop string belongs to the model's step);
the environment parses the step, runs the call and replies, until the episode ends (an answer,
or the loop-limit halt after ``max_rounds``), or ``max_turns`` model turns, or the token budget.

:class:`TrajectoryStats` per rollout: valid format (VF), valid / invalid calls, loop-limit halt,
rounds N, S-rounds / E-rounds and the GraphDancer level, evidence hit (EH: the gold answer occurs
in some observation — for a set answer, every member does), the final answer, token counts; and
the queries the episode marked as evidence (Python + Cypher), for the ``graphcert`` reward.
Batched: every turn is one ``generate_ids`` call for all still-running rollouts (CPU
transformers, or vLLM on a GPU).

Seeds. Episode ``g`` (its index in the run, plus ``first``) samples turn ``t`` from its own stream,
seeded from ``(seed, g, t)`` (``SamplingParams.seeds``) — not from its position in a batch — so
an episode plays the same whatever else is in its batch, which episodes finished before it, how
the run is chunked, or which process of a multi-process trainer plays it (that process passes the
global index of its first episode as ``first``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

from components.curriculum.sampler import level_of, round_kinds
from components.llm.base import Generation, SamplingParams, mixed_seed
from components.rubric.metrics import answers_equal, normalize_answer, split_set
from components.tools.env import ToolEnvironment

__all__ = [
    "CODE_STOPS",
    "SOLVER_STOPS",
    "STOPS",
    "RolloutConfig",
    "RolloutRecord",
    "RolloutRunner",
    "TokenBackend",
    "TrajectoryStats",
    "answer_in_results",
    "episode_seed",
    "evidence_hit",
]

STOPS = ("</graph>", "</answer>")  # tag-protocol steps (Graph-CoT, graph IR)
CODE_STOPS = ("```\n", "</answer>")  # Python + Cypher steps end at the closing fence
#: the stops of each solver environment a checkpoint is trained and evaluated in
SOLVER_STOPS: Final = {"python_cypher": CODE_STOPS, "graph_cot": STOPS}


@runtime_checkable
class TokenBackend(Protocol):
    """A generation backend that continues raw token sequences (transformers, vLLM)."""

    tokenizer: Any

    def generate_ids(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[list[Generation]]: ...


@dataclass(frozen=True)
class RolloutConfig:
    max_turns: int = 12  # model turns (the environment's own loop limit usually ends it first)
    max_new_tokens: int = 256  # per turn
    max_total_tokens: int = 4096  # prompt + completion
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = 0
    system_prompt: str | None = None
    stops: tuple[str, ...] = STOPS  # a step ends at the first of these (it belongs to the step)
    #: episodes played to the end together: bounds the key/value working set the generation
    #: engine keeps across turns (a chunk's histories stay cached instead of being evicted)
    chunk: int = 128


def episode_seed(seed: int, episode: int, turn: int) -> int:
    """The sampling seed of turn ``turn`` of episode ``episode`` of a run seeded ``seed``
    (:func:`~components.llm.base.mixed_seed` of the triple, so runs seeded ``seed`` and ``seed + 1``
    — GRPO seeds each generation step apart — share no stream)."""
    return mixed_seed(seed, episode, turn)


@dataclass(frozen=True)
class TrajectoryStats:
    valid_format: bool
    valid_calls: int
    invalid_calls: int
    halted: bool
    rounds: int
    s_rounds: int
    e_rounds: int
    level: str
    evidence_hit: bool | None  # None without a gold answer
    answer: str | None
    answered: bool
    model_tokens: int
    env_tokens: int
    truncated: bool  # stopped by max_turns / the token budget before the episode ended
    #: the answer equals a value the episode's own calls obtained (:func:`answer_in_results`)
    answer_in_results: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RolloutRecord:
    row: dict[str, Any]
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    completion_text: str = ""
    trace: dict[str, Any] = field(default_factory=dict)
    stats: TrajectoryStats | None = None
    wall_s: float = 0.0
    evidence: list[str] = field(default_factory=list)  # marked queries (Python + Cypher episodes)

    def segments(self) -> list[tuple[int, list[int]]]:
        """The completion as ``(mask value, ids)`` runs, in order."""
        out: list[tuple[int, list[int]]] = []
        for tok, m in zip(self.completion_ids, self.loss_mask, strict=True):
            if out and out[-1][0] == m:
                out[-1][1].append(tok)
            else:
                out.append((m, [tok]))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "row": self.row,
            "prompt_ids": self.prompt_ids,
            "completion_ids": self.completion_ids,
            "loss_mask": self.loss_mask,
            "completion_text": self.completion_text,
            "trace": self.trace,
            "stats": None if self.stats is None else self.stats.to_dict(),
            "wall_s": self.wall_s,
            "evidence": list(self.evidence),
        }


def answer_in_results(answer: Any, answer_type: str | None, values: Sequence[Any]) -> bool:
    """The answer, typed as ``answer_type``, equals one of ``values`` — what the episode's own
    calls obtained (:meth:`~components.tools.episodes.CodeCall.result_values`: a cell, one
    column's values as a set, a row count; Graph-CoT: a feature value, a degree, returned ids).
    A yes/no answer is read off the graph only from a boolean cell: a query that merely returned
    rows (or none) does not ground "yes" (or "no").

    >>> answer_in_results("12", "number", ["Ann", 12, ["a", "b"]]), answer_in_results("no", "boolean", [0, []])
    (True, False)
    """
    if answer is None or not str(answer).strip():
        return False
    for v in values:
        if answer_type == "boolean" and not isinstance(v, bool):
            continue
        if answer_type != "set" and isinstance(v, list) and len(v) != 1:
            continue
        if answers_equal(answer, v, answer_type):
            return True
    return False


def _obtained(trace: Any) -> list[Any]:
    out: list[Any] = []
    for r in trace.rounds:
        values = getattr(r.call, "result_values", None) if r.executed and r.call is not None else None
        if callable(values):
            out += values()
    return out


def evidence_hit(gold: Any, observations: Sequence[str], answer_type: str | None = None) -> bool:
    """EH: the gold answer occurs (normalised) in some observation; a set answer: every member.

    >>> evidence_hit("Ada Lovelace", ["found: ada lovelace (author_1)"])
    True
    """
    text = " ".join(normalize_answer(o) for o in observations)
    if answer_type == "set":
        members = {normalize_answer(m) for m in split_set(gold)} - {""}
        return bool(members) and all(m in text for m in members)
    target = normalize_answer(gold)
    return bool(target) and target in text


class RolloutRunner:
    """Runs batched multi-turn rollouts; see the module docstring.

    ``make_env`` builds a fresh environment per rollout (``reset(**row)`` returns the task
    prompt). ``backend`` must offer ``generate_ids`` and a ``tokenizer`` with a chat template.
    """

    def __init__(
        self, backend: TokenBackend, make_env: Callable[[], ToolEnvironment], config: RolloutConfig = RolloutConfig()
    ) -> None:
        if not isinstance(backend, TokenBackend):
            raise TypeError("the backend must continue token ids (generate_ids) and expose its tokenizer")
        self.backend, self.make_env, self.config = backend, make_env, config
        self.tokenizer = backend.tokenizer

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _prompt_ids(self, task: str) -> list[int]:
        messages = [{"role": "system", "content": self.config.system_prompt}] if self.config.system_prompt else []
        messages.append({"role": "user", "content": task})
        text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return self._encode(text)

    def run(self, rows: Sequence[dict[str, Any]], *, n: int = 1, first: int = 0) -> list[RolloutRecord]:
        """``n`` rollouts per row (row-major order: row 0's n, then row 1's …); ``first``: the
        index of this run's first episode in a larger one (the seeds: see the module docstring)."""
        cfg = self.config
        if cfg.chunk < 1:
            raise ValueError(f"chunk must be >= 1, got {cfg.chunk}")
        t0 = time.perf_counter()
        envs: list[ToolEnvironment] = []
        records: list[RolloutRecord] = []
        for row in rows:
            for _ in range(n):
                env = self.make_env()
                task = env.reset(**row) or str(row.get("question", ""))
                envs.append(env)
                records.append(RolloutRecord(dict(row), self._prompt_ids(task)))
        try:
            finished = [False] * len(records)
            truncated = [False] * len(records)
            for start in range(0, len(records), cfg.chunk):
                chunk = list(range(start, min(start + cfg.chunk, len(records))))
                self._play(chunk, records, envs, finished, truncated, first=first)
            for i in range(len(records)):
                if not finished[i]:
                    truncated[i] = True
            wall = time.perf_counter() - t0
            for i, (rec, env) in enumerate(zip(records, envs, strict=True)):
                rec.completion_text = self.tokenizer.decode(rec.completion_ids, skip_special_tokens=False)
                rec.trace = env.trace.to_dict()
                rec.stats = self._stats(rec, env, truncated[i])
                rec.wall_s = wall
                rec.evidence = [t.query for t in getattr(env, "evidence", None) or []]
        finally:
            for env in envs:  # e.g. the sandbox process of a python_cypher episode
                close = getattr(env, "close", None)
                if callable(close):
                    close()
        return records

    def _play(
        self,
        chunk: list[int],
        records: list[RolloutRecord],
        envs: list[ToolEnvironment],
        finished: list[bool],
        truncated: list[bool],
        *,
        first: int,
    ) -> None:
        """Every turn of the episodes ``chunk`` (indices into ``records`` / ``envs``), in place;
        episode ``i`` samples turn ``t`` with the seed of ``(seed, first + i, t)``."""
        cfg = self.config
        for turn in range(cfg.max_turns):
            active = [i for i in chunk if not finished[i]]
            if not active:
                break
            budget = {
                i: cfg.max_total_tokens - len(records[i].prompt_ids) - len(records[i].completion_ids) for i in active
            }
            for i in [i for i in active if budget[i] <= 0]:
                finished[i] = truncated[i] = True
            active = [i for i in active if budget[i] > 0]
            if not active:
                break
            params = SamplingParams(
                max_new_tokens=max(1, min(cfg.max_new_tokens, min(budget[i] for i in active))),
                temperature=cfg.temperature,
                top_p=cfg.top_p,
                top_k=cfg.top_k,
                stop=cfg.stops,
                seed=cfg.seed,
                seeds=None if cfg.seed is None else tuple(episode_seed(cfg.seed, first + i, turn) for i in active),
                n=1,
            )
            gens = self.backend.generate_ids(
                [records[i].prompt_ids + records[i].completion_ids for i in active], params
            )
            for i, (g,) in zip(active, gens, strict=True):
                rec, env = records[i], envs[i]
                rec.completion_ids += list(g.token_ids)
                rec.loss_mask += [1] * len(g.token_ids)
                step_text = g.text + (g.stop_reason if g.stop_reason in cfg.stops else "")
                reply, done = env.step(step_text)
                if done:
                    finished[i] = True
                    continue
                env_ids = self._encode(reply)
                rec.completion_ids += env_ids
                rec.loss_mask += [0] * len(env_ids)

    @staticmethod
    def _stats(rec: RolloutRecord, env: ToolEnvironment, truncated: bool) -> TrajectoryStats:
        trace = env.trace
        executed = [r for r in trace.rounds if r.executed]
        returned = [r.node_ids for r in executed]
        kinds = round_kinds(returned)
        gold = rec.row.get("answer")
        return TrajectoryStats(
            valid_format=trace.valid_format,
            valid_calls=sum(1 for r in trace.rounds if r.valid_call is True),
            invalid_calls=trace.invalid_calls,
            halted=trace.halted,
            rounds=trace.n_rounds,
            s_rounds=kinds.count("S"),
            e_rounds=kinds.count("E"),
            level=level_of(returned),
            evidence_hit=None if gold is None else evidence_hit(gold, trace.observations, rec.row.get("answer_type")),
            answer=trace.answer,
            answered=trace.answered,
            model_tokens=sum(rec.loss_mask),
            env_tokens=len(rec.loss_mask) - sum(rec.loss_mask),
            truncated=truncated,
            answer_in_results=answer_in_results(trace.answer, rec.row.get("answer_type"), _obtained(trace)),
        )
