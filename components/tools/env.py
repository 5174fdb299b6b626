"""The one episode interface shared by every tool set (Graph-CoT functions, the Python + Cypher
sandbox, the GRAIN graph-IR solver).

An environment is shaped like TRL's ``environment_factory`` environments — one instance per
rollout, ``reset(**row)`` from a dataset row, then ``step(model_text)`` until done — without
depending on TRL. Every environment keeps the same :class:`EpisodeTrace`: one
:class:`RoundRecord` per model step (the text, how it parsed, the tool call with its arguments,
result or error and **the node ids it returned** — ``U_t`` for S-round/E-round bookkeeping — the
observation), then the final answer or the loop-limit halt.

:class:`RoundLoop` implements the loop once: ``T_MAX`` executed rounds, then (by default) one
final turn in which only an answer counts; anything else then is a loop-limit halt, recorded
unexecuted. Subclasses say how to parse a step and how to execute it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from components.tools.protocol import StepKind

__all__ = [
    "ENVIRONMENTS",
    "T_MAX",
    "EpisodeTrace",
    "ParsedStep",
    "RoundLoop",
    "RoundRecord",
    "ToolCall",
    "ToolEnvironment",
    "information_block",
    "register_environment",
]

T_MAX = 10
EPISODE_OVER = "The episode is over: no more tool calls are executed."


def information_block(observation: str) -> str:
    """The environment's reply as inserted into the transcript (masked out of policy losses)."""
    return f"\n\n<information>{observation}</information>\n\n"


@runtime_checkable
class ToolCall(Protocol):
    """What every tool set records for one call."""

    @property
    def ok(self) -> bool: ...

    @property
    def node_ids(self) -> tuple[str, ...]: ...

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class RoundRecord:
    """One round: what the model wrote, how it parsed, what ran and what came back."""

    index: int  # 1-based
    model_text: str | None  # None for a direct tool-method call
    kind: StepKind
    reason: str | None = None
    call: ToolCall | None = None
    observation: str = ""  # the environment's text for this round, "" for the answer step
    executed: bool = False
    over_limit: bool = False  # a non-answer step after the loop limit: ends the episode unexecuted

    @property
    def valid_format(self) -> bool:
        return self.kind is not StepKind.INVALID_FORMAT

    @property
    def valid_call(self) -> bool | None:
        """True for a call that parsed and ran without error; ``None`` for the answer step and
        for the over-limit step (counted as the halt, not as an invalid call)."""
        if self.kind is StepKind.ANSWER or self.over_limit:
            return None
        return self.kind is StepKind.CALL and self.call is not None and self.call.ok

    @property
    def node_ids(self) -> tuple[str, ...]:
        """``U_t``: node ids returned in this round."""
        return tuple(self.call.node_ids) if self.call is not None else ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "model_text": self.model_text,
            "kind": str(self.kind),
            "reason": self.reason,
            "call": None if self.call is None else self.call.to_dict(),
            "observation": self.observation,
            "executed": self.executed,
            "over_limit": self.over_limit,
            "valid_format": self.valid_format,
            "valid_call": self.valid_call,
            "node_ids": list(self.node_ids),
        }


@dataclass
class EpisodeTrace:
    row: dict[str, Any] = field(default_factory=dict)
    rounds: list[RoundRecord] = field(default_factory=list)
    answer: str | None = None
    halted: bool = False  # loop-limit halt
    done: bool = False

    @property
    def answered(self) -> bool:
        return self.answer is not None

    @property
    def n_rounds(self) -> int:
        """N: tool-interaction rounds (every round but the answer and the over-limit step)."""
        return sum(1 for r in self.rounds if r.kind is not StepKind.ANSWER and not r.over_limit)

    @property
    def invalid_calls(self) -> int:
        """I: rounds whose action was not a valid, successful call (answer excluded)."""
        return sum(1 for r in self.rounds if r.valid_call is False)

    @property
    def valid_format(self) -> bool:
        """VF: every round followed the protocol and the episode ended with an answer."""
        return self.answered and all(r.valid_format for r in self.rounds)

    @property
    def returned_node_ids(self) -> list[tuple[str, ...]]:
        """``U_t`` per round, in round order."""
        return [r.node_ids for r in self.rounds]

    @property
    def observations(self) -> list[str]:
        return [r.observation for r in self.rounds if r.observation]

    def to_dict(self) -> dict[str, Any]:
        return {
            "row": dict(self.row),
            "rounds": [r.to_dict() for r in self.rounds],
            "answer": self.answer,
            "halted": self.halted,
            "done": self.done,
            "n_rounds": self.n_rounds,
            "invalid_calls": self.invalid_calls,
            "valid_format": self.valid_format,
        }


@runtime_checkable
class ToolEnvironment(Protocol):
    trace: EpisodeTrace

    def reset(self, **row: Any) -> str: ...

    def step(self, model_text: str) -> tuple[str, bool]: ...

    @property
    def done(self) -> bool: ...


@dataclass(frozen=True)
class ParsedStep:
    """A model step as a subclass parsed it: ``payload`` is whatever ``execute`` needs."""

    kind: StepKind
    reason: str | None = None
    answer: str | None = None
    payload: Any = None


class RoundLoop:
    """The round loop shared by all environments (see the module docstring)."""

    def __init__(self, *, max_rounds: int = T_MAX, final_answer_turn: bool = True) -> None:
        if max_rounds < 1:
            raise ValueError("max_rounds must be >= 1")
        self.max_rounds = max_rounds
        self.final_answer_turn = final_answer_turn
        self.trace = EpisodeTrace()

    # -- to implement ----------------------------------------------------------------------
    def parse(self, model_text: str) -> ParsedStep:
        raise NotImplementedError

    def execute(self, step: ParsedStep) -> tuple[ToolCall | None, str, bool]:
        """Run a CALL or INVALID_* step: ``(call record, observation, executed)``."""
        raise NotImplementedError

    def reply(self, observation: str) -> str:
        return information_block(observation)

    # -- the loop --------------------------------------------------------------------------
    def start(self, row: dict[str, Any]) -> None:
        self.trace = EpisodeTrace(row=dict(row))

    @property
    def done(self) -> bool:
        return self.trace.done

    @property
    def rounds_used(self) -> int:
        return len(self.trace.rounds)

    def _in_final_turn(self) -> bool:
        return self.rounds_used >= self.max_rounds

    def step(self, model_text: str) -> tuple[str, bool]:
        """Consume one model step; returns ``(environment reply, done)``. The reply is empty
        when the episode ends (answer or loop-limit halt) or is already over."""
        if self.trace.done:
            return "", True
        step = self.parse(model_text if isinstance(model_text, str) else "")
        index = self.rounds_used + 1
        if step.kind is StepKind.ANSWER:
            self._record(RoundRecord(index, model_text, step.kind, step.reason))
            self.trace.answer = step.answer
            self.trace.done = True
            return "", True
        if self._in_final_turn():  # the extra turn after max_rounds: only an answer counts
            self._record(RoundRecord(index, model_text, step.kind, step.reason, over_limit=True))
            return self._halt()
        call, observation, executed = self.execute(step)
        self._record(RoundRecord(index, model_text, step.kind, step.reason, call, observation, executed))
        if self._in_final_turn() and not self.final_answer_turn:
            return self._halt()
        return self.reply(observation), False

    def _halt(self) -> tuple[str, bool]:
        self.trace.halted = True
        self.trace.done = True
        return "", True

    def _record(self, record: RoundRecord) -> None:
        self.trace.rounds.append(record)


ENVIRONMENTS: dict[str, Callable[..., ToolEnvironment]] = {}


def register_environment(name: str) -> Callable[[Callable[..., ToolEnvironment]], Callable[..., ToolEnvironment]]:
    """Register an environment class by name (YAML configs refer to environments by name)."""

    def deco(cls: Callable[..., ToolEnvironment]) -> Callable[..., ToolEnvironment]:
        ENVIRONMENTS[name] = cls
        return cls

    return deco
