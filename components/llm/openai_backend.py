"""Generation through any OpenAI-compatible chat endpoint (``vllm serve``, llama.cpp's server, ...).

One ``POST {base_url}/v1/chat/completions`` per conversation (sent concurrently, up to
``max_concurrency`` at a time, so a batching server sees a batch); conversation ``i`` carries
``seed + i`` and ``n`` — the same seeding contract as the in-process backends. ``top_k`` is sent as
an extra body field (vLLM and llama.cpp accept it; OpenAI itself would reject it, so it is only
sent when > 0).

Token counts come from the response's ``usage``: ``prompt_tokens`` is the conversation's prompt
(counted once by servers even when ``n > 1``) and is repeated on every choice;
``completion_tokens`` is the total over all choices, so with ``n > 1`` it is split evenly across
them (the first ``total % n`` choices get one more) — servers do not report per-choice counts.
``latency_s`` is the request's wall time.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from components.llm.base import (
    ChatMessage,
    Generation,
    LLMError,
    SamplingParams,
    continues,
    register_backend,
)

__all__ = ["OpenAIBackend"]


def _chat_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    if base.endswith("/v1"):
        return base + "/chat/completions"
    return base + "/v1/chat/completions"


@register_backend("openai")
class OpenAIBackend:
    """``base_url`` like ``http://127.0.0.1:8000`` (``/v1`` optional); ``model`` the served model id."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60,
        max_concurrency: int = 8,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise LLMError(f"base_url must start with http:// or https://, got {base_url!r}")
        self.url = _chat_url(base_url)
        self.model_name = model
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.max_concurrency = max(1, max_concurrency)

    def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], params: SamplingParams
    ) -> list[list[Generation]]:
        bodies = [self._body(conv, params, i) for i, conv in enumerate(conversations)]
        if len(bodies) <= 1 or self.max_concurrency == 1:
            return [self._request(b, params) for b in bodies]
        with ThreadPoolExecutor(min(self.max_concurrency, len(bodies))) as pool:
            return list(pool.map(lambda b: self._request(b, params), bodies))

    def close(self) -> None:
        pass

    # -- internals ------------------------------------------------------------------------------
    def _body(self, conv: Sequence[ChatMessage], params: SamplingParams, i: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": [dict(m) for m in conv],
            "n": params.n,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
        }
        if params.top_k > 0:
            body["top_k"] = params.top_k
        if params.stop:
            body["stop"] = list(params.stop)
        seed = params.request_seed(i)
        if seed is not None:
            body["seed"] = seed
        if continues(conv):  # an assistant prefix: the chat-completions extension vLLM's server reads
            body.update(continue_final_message=True, add_generation_prompt=False)
        return body

    def _request(self, body: dict[str, Any], params: SamplingParams) -> list[Generation]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise LLMError(f"{self.url} answered HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError) as exc:  # refused, DNS, timeout
            reason = getattr(exc, "reason", exc)
            raise LLMError(f"cannot reach {self.url}: {reason}") from exc
        latency = time.perf_counter() - t0
        try:
            data = json.loads(raw)
            choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
            usage = data.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens", 0))
            total = int(usage.get("completion_tokens", 0))
            texts = [c["message"]["content"] or "" for c in choices]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise LLMError(f"{self.url} returned malformed JSON ({exc}): {raw[:200]!r}") from exc
        if len(choices) != params.n:
            raise LLMError(f"{self.url} returned {len(choices)} choices, expected n={params.n}")
        gens = []
        for k, (choice, text) in enumerate(zip(choices, texts)):
            share = total // len(choices) + (1 if k < total % len(choices) else 0)
            gens.append(
                Generation(
                    text=_cut_text(text, params.stop)[0],
                    prompt_tokens=prompt_tokens,
                    completion_tokens=share,
                    stop_reason=_reason(choice, text, params),
                    latency_s=latency,
                )
            )
        return gens


def _cut_text(text: str, stops: Sequence[str]) -> tuple[str, str | None]:
    best: tuple[int, str] | None = None
    for s in stops:
        pos = text.find(s) if s else -1
        if pos >= 0 and (best is None or pos < best[0]):
            best = (pos, s)
    return (text, None) if best is None else (text[: best[0]], best[1])


def _reason(choice: dict[str, Any], text: str, params: SamplingParams) -> str:
    """``"length"``, the stop string (vLLM names it in ``stop_reason``; a server that left it in the
    text is cut here), or ``"eos"``."""
    _, hit = _cut_text(text, params.stop)
    if hit is not None:
        return hit
    if choice.get("finish_reason") == "length":
        return "length"
    named = choice.get("stop_reason")
    if isinstance(named, str) and named in params.stop:
        return named
    return "eos"
