"""Test doubles shared by the test suite.

:class:`ScriptedBackend` is the one scripted (canned-reply) *generation backend*: it stands in for
a model's output in mechanics tests (judge batching and parsing, the LLM Quizzer's failure and
repair paths, the rollout loss mask). It is never a stand-in for a real graph, parser or model
run; the tests that need one use the real thing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from components.llm.base import ChatMessage, Generation, SamplingParams, continues

Reply = str | tuple[str, str]
#: ``script(conversation, turn)`` → the reply for that conversation's turn ``turn`` (0-based: the
#: number of assistant messages already in it, an assistant prefix at its end not counted). The
#: reply is the whole turn; after an assistant prefix the double returns what follows the prefix.
Script = Callable[[Sequence[ChatMessage], int], Reply]


class ScriptedBackend:
    """Returns scripted replies and records every request.

    ``replies`` is either a sequence (one reply per conversation / prompt — ``params.n`` per
    conversation in chat mode — consumed in order) or a :data:`Script`. A reply is a text or
    ``(text, stop_reason)``; with a stop string as the reason the text is cut before it, as a real
    backend does. ``fail=True`` makes every call raise
    ``RuntimeError("backend down")`` (after recording the request).

    It satisfies :class:`~components.llm.base.GenerationBackend` (``generate`` on chat
    conversations) and, given a ``tokenizer``, :class:`~components.rollout.TokenBackend`
    (``generate_ids`` on token-id prompts: a plain reply stops at the one of ``params.stop`` it
    ends with; ``token_ids`` are the tokenizer's ids of the whole reply, ``prompt_tokens`` the
    prompt's length).

    Chat mode reports ``prompt_tokens`` per completion and ``completion_tokens`` (an int, or a
    function of the reply text).

    Recorded: ``calls`` (each batch: its conversations or prompts, copied), ``batches`` (the batch
    sizes) and ``prompts`` (every conversation or prompt, in order).
    """

    name = "scripted"
    model_name = "scripted"

    def __init__(
        self,
        replies: Sequence[Reply] | Script,
        *,
        tokenizer: Any = None,
        fail: bool = False,
        prompt_tokens: int = 10,
        completion_tokens: int | Callable[[str], int] = 5,
    ) -> None:
        self.script: Script | None = replies if callable(replies) else None
        self.replies: list[Reply] = [] if callable(replies) else list(replies)
        self.tokenizer = tokenizer
        self.fail = fail
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.calls: list[list[list[Any]]] = []

    @property
    def batches(self) -> list[int]:
        return [len(call) for call in self.calls]

    @property
    def prompts(self) -> list[list[Any]]:
        return [p for call in self.calls for p in call]

    def _record(self, batch: Sequence[Sequence[Any]]) -> None:
        self.calls.append([list(item) for item in batch])
        if self.fail:
            raise RuntimeError("backend down")

    def _reply(self, conversation: Sequence[Any]) -> tuple[str, str | None]:
        prefix = ""
        if self.script is not None:
            turn = sum(1 for m in conversation if m["role"] == "assistant")
            if continues(conversation):  # an assistant prefix: continued, as a real backend does
                prefix, turn = conversation[-1]["content"], turn - 1
            res = self.script(conversation, turn)
        else:
            res = self.replies.pop(0)
        text, stop = res if isinstance(res, tuple) else (res, None)
        return text.removeprefix(prefix), stop

    @staticmethod
    def _cut(text: str, stop: str) -> str:
        return text if stop in ("eos", "length") else text.split(stop)[0]

    def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], params: SamplingParams
    ) -> list[list[Generation]]:
        self._record(conversations)
        out = []
        for conv in conversations:
            gens = []
            for _ in range(max(1, params.n)):  # n completions: n replies, in order
                text, stop = self._reply(conv)
                stop = stop or "eos"
                text = self._cut(text, stop)
                used = self.completion_tokens
                gens.append(Generation(text, self.prompt_tokens, used(text) if callable(used) else used, stop))
            out.append(gens)
        return out

    def generate_ids(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[list[Generation]]:
        if self.tokenizer is None or self.script is not None:
            raise TypeError("generate_ids needs a tokenizer and a sequence of replies")
        self._record(prompts)
        out = []
        for p in prompts:
            full, stop = self._reply(p)
            if stop is None:
                stop = next((s for s in params.stop if full.endswith(s)), None)
                text = full[: -len(stop)] if stop else full
            else:
                text = self._cut(full, stop)
            ids = self.tokenizer(full, add_special_tokens=False)["input_ids"]
            out.append([Generation(text, len(p), len(ids), stop or "eos", token_ids=tuple(ids))])
        return out

    def close(self) -> None:
        pass
