"""One interface for every generation backend (transformers on CPU, vLLM on GPU, any
OpenAI-compatible endpoint): chat messages in, batched sampled texts and token counts out.

Backends are registered by name (``BACKENDS``) so YAML configs refer to them by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "BACKENDS",
    "ChatMessage",
    "Generation",
    "GenerationBackend",
    "LLMError",
    "SamplingParams",
    "continues",
    "register_backend",
]

ChatMessage = Mapping[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}


class LLMError(Exception):
    """A backend could not be created or could not generate (missing or malformed model folder,
    unreachable endpoint, ...). The message names the path or URL."""


def mixed_seed(*parts: int) -> int:
    """One generator seed from several integers (a conversation's seed and its sample; a run's
    seed, an episode and a turn), mixed through numpy's ``SeedSequence`` so nearby tuples do not
    share streams (the first part taken modulo 2⁶⁴: it may be negative or large).

    >>> mixed_seed(0, 2, 1) == mixed_seed(0, 2, 1) != mixed_seed(0, 1, 2)
    True
    """
    import numpy as np

    state = np.random.SeedSequence([parts[0] & 0xFFFFFFFFFFFFFFFF, *parts[1:]]).generate_state(2, np.uint32)
    return int(state[0]) << 31 ^ int(state[1])


@dataclass(frozen=True)
class SamplingParams:
    """``temperature == 0`` means greedy. ``seed`` makes sampling reproducible: request ``i`` of a
    batch samples with ``seed + i`` (so a batch equals the same requests made one by one), or with
    ``seeds[i]`` when ``seeds`` is given (one per request: a caller whose requests have their own
    identity — a rollout's episodes — keeps each request's stream whatever else is in the batch)."""

    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0  # 0 = off
    stop: tuple[str, ...] = ()
    seed: int | None = 0
    n: int = 1  # completions per conversation
    seeds: tuple[int, ...] | None = None  # per request, instead of seed + i

    def request_seed(self, i: int) -> int | None:
        """The seed of request ``i`` of a batch (``None``: unseeded)."""
        if self.seeds is not None:
            return self.seeds[i]
        return None if self.seed is None else self.seed + i


@dataclass(frozen=True)
class Generation:
    """One completion. ``text`` is cut before the first stop string (``stop_reason`` says which
    one, or ``"length"`` / ``"eos"``)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    stop_reason: str
    latency_s: float = 0.0
    token_ids: tuple[int, ...] = field(default=(), repr=False)


@runtime_checkable
class GenerationBackend(Protocol):
    name: str  # backend kind, e.g. "transformers"
    model_name: str  # what was loaded (folder or served model id)

    def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], params: SamplingParams
    ) -> list[list[Generation]]:
        """For each conversation, ``params.n`` generations (outer list in input order). A
        conversation that ends with an assistant message is *continued*: that message is the start
        of the reply (an assistant prefix), and the generation's text is what follows it."""
        ...

    def close(self) -> None: ...


BACKENDS: dict[str, Callable[..., GenerationBackend]] = {}


def continues(conversation: Sequence[ChatMessage]) -> bool:
    """Whether ``conversation`` ends with an assistant message, i.e. asks for that message to be
    continued rather than for a new reply (:meth:`GenerationBackend.generate`)."""
    return bool(conversation) and conversation[-1].get("role") == "assistant"


def register_backend(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(factory: Callable[..., Any]) -> Callable[..., Any]:
        BACKENDS[name] = factory
        return factory

    return deco
