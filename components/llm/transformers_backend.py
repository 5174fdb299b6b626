"""The CPU default generation backend: Hugging Face ``transformers`` ``generate`` on a local model
folder (SmolLM2-135M-Instruct unless told otherwise).

Seeds. Conversation ``i`` of a call samples with seed ``params.seed + i``; its ``n`` completions use
per-sequence ``torch.Generator`` s seeded from ``(seed + i, j)`` for ``j < n``. Sampling happens in a
logits processor that draws each row's token with that row's own generator (HF's sampler would
draw every row from one global RNG, so a row's tokens would depend on its batch neighbours), and
HF's greedy step then picks the drawn token. So a batched call returns the same texts as the same
conversations sent one by one with ``seed + i`` — we keep cross-conversation batching (the
throughput win) rather than generating each seed group separately. The one caveat: batching
changes the padding and matrix shapes, so logits can differ in the last float bits; a token
whose sampled cumulative probability sits exactly on such a boundary could flip. On CPU float32
this is deterministic run to run and, in our tests, batch == one-by-one.

Stops. A stopping criterion checks each unfinished row after every step: an EOS token, or the
decoded completion containing a stop string, finishes the row (HF then pads it while others run
on). The returned text is cut before the first stop string; ``completion_tokens`` counts the
tokens generated up to and including the one that finished the row.

``latency_s`` of a :class:`~components.llm.base.Generation` is the wall time of the ``generate``
call (one batch of up to ``batch_size`` rows) that produced it.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationConfig,
    LogitsProcessor,
    LogitsProcessorList,
    StoppingCriteria,
    StoppingCriteriaList,
)

from components.llm.base import (
    ChatMessage,
    Generation,
    LLMError,
    SamplingParams,
    register_backend,
)
from components.llm.models import load_model_dir, smollm2_hf_dir

__all__ = ["TransformersBackend", "sequence_seed"]

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def sequence_seed(base: int, sample: int) -> int:
    """The generator seed for completion ``sample`` of a conversation whose seed is ``base``
    (mixed through numpy's ``SeedSequence`` so nearby pairs do not collide)."""
    state = np.random.SeedSequence([base & 0xFFFFFFFFFFFFFFFF, sample]).generate_state(2, np.uint32)
    return int(state[0]) << 31 ^ int(state[1])


class _RowSampler(LogitsProcessor):
    """Temperature / top-k / top-p, then one multinomial draw per row with that row's generator;
    every other token is set to -inf so the greedy step picks the drawn one."""

    def __init__(self, generators: list[torch.Generator], params: SamplingParams) -> None:
        self.generators = generators
        self.temperature = params.temperature
        self.top_k = params.top_k
        self.top_p = params.top_p

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        scores = scores.float() / self.temperature
        if self.top_k > 0:
            k = min(self.top_k, scores.shape[-1])
            kth = torch.topk(scores, k, dim=-1).values[:, -1:]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        if self.top_p < 1.0:
            sorted_scores, idx = torch.sort(scores, descending=True, dim=-1)
            probs = sorted_scores.softmax(dim=-1)
            drop = probs.cumsum(dim=-1) - probs > self.top_p  # keeps at least the top token
            scores = scores.masked_fill(drop.scatter(-1, idx, drop), float("-inf"))
        probs = scores.softmax(dim=-1)
        out = torch.full_like(scores, float("-inf"))
        for r, gen in enumerate(self.generators):
            tok = torch.multinomial(probs[r], 1, generator=gen)
            out[r, tok] = 0.0
        return out


class _StopTracker(StoppingCriteria):
    """Finishes a row on EOS or when its decoded completion contains a stop string, and records
    after how many generated tokens and why."""

    def __init__(self, tokenizer: Any, prompt_len: int, batch: int, eos_ids: set[int], stops: Sequence[str]) -> None:
        self.tokenizer = tokenizer
        self.prompt_len = prompt_len
        self.eos_ids = eos_ids
        self.stops = tuple(s for s in stops if s)
        # a window of tokens long enough to contain any stop string (each token decodes to >= 1 char)
        self.window = max((len(s) for s in self.stops), default=0) + 8
        self.done = torch.zeros(batch, dtype=torch.bool)
        self.lengths = [0] * batch
        self.reasons = ["length"] * batch

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: Any) -> torch.BoolTensor:
        gen = input_ids[:, self.prompt_len :]
        steps = gen.shape[1]
        last = gen[:, -1].tolist()
        for r in range(gen.shape[0]):
            if self.done[r]:
                continue
            if last[r] in self.eos_ids:
                self.done[r], self.lengths[r], self.reasons[r] = True, steps, "eos"
            elif self.stops:
                tail = self.tokenizer.decode(gen[r, -self.window :], skip_special_tokens=True)
                if any(s in tail for s in self.stops):
                    self.done[r], self.lengths[r], self.reasons[r] = True, steps, "stop"
            if not self.done[r]:
                self.lengths[r] = steps
        return self.done.to(input_ids.device).clone()


def _cut(text: str, stops: Sequence[str]) -> tuple[str, str | None]:
    """Text before the earliest stop string, and that string (None when none occurs)."""
    best: tuple[int, str] | None = None
    for s in stops:
        if not s:
            continue
        pos = text.find(s)
        if pos >= 0 and (best is None or pos < best[0]):
            best = (pos, s)
    return (text, None) if best is None else (text[: best[0]], best[1])


@register_backend("transformers")
class TransformersBackend:
    """Batched chat generation with ``transformers`` (see the module docstring for seeding).

    ``model_dir``: any local Hugging Face causal-LM folder; default SmolLM2-135M-Instruct converted
    under ``data/models``. ``chat_template`` overrides the tokenizer's template (Jinja source).
    """

    name = "transformers"

    def __init__(
        self,
        model_dir: Path | str | None = None,
        *,
        device: str = "cpu",
        dtype: str = "float32",
        threads: int | None = None,
        batch_size: int = 16,
        chat_template: str | None = None,
    ) -> None:
        if dtype not in _DTYPES:
            raise LLMError(f"unknown dtype {dtype!r}; expected one of {', '.join(_DTYPES)}")
        if batch_size < 1:
            raise LLMError(f"batch_size must be >= 1, got {batch_size}")
        if threads:
            torch.set_num_threads(int(threads))
        path = load_model_dir(model_dir if model_dir is not None else smollm2_hf_dir())
        self.model_name = str(path)
        self.device = torch.device(device)
        self.batch_size = batch_size
        t0 = time.perf_counter()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            self.model = AutoModelForCausalLM.from_pretrained(path, dtype=_DTYPES[dtype])
        except Exception as exc:  # transformers raises many kinds; all mean "cannot load"
            raise LLMError(f"cannot load model folder {path}: {exc}") from exc
        self.model.to(self.device).eval()
        self.load_s = time.perf_counter() - t0
        if chat_template is not None:
            self.tokenizer.chat_template = chat_template
        if not self.tokenizer.chat_template:
            raise LLMError(f"model folder {path}: the tokenizer has no chat template")
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self.tokenizer.eos_token_id is not None:
            eos_ids.add(self.tokenizer.eos_token_id)
        if not eos_ids:
            raise LLMError(f"model folder {path}: no eos token id in config or tokenizer")
        self.eos_ids = eos_ids

    @classmethod
    def wrap(cls, model: Any, tokenizer: Any, *, batch_size: int = 16) -> TransformersBackend:
        """A backend over an already loaded model and tokenizer (e.g. the policy a trainer is
        updating), without loading anything; generation runs under ``inference_mode``."""
        self = cls.__new__(cls)
        self.model, self.tokenizer, self.batch_size = model, tokenizer, batch_size
        self.model_name = str(getattr(getattr(model, "config", None), "name_or_path", "") or type(model).__name__)
        self.device = next(model.parameters()).device
        self.load_s = 0.0
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        eos = getattr(model.generation_config, "eos_token_id", None)
        self.eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if tokenizer.eos_token_id is not None:
            self.eos_ids.add(tokenizer.eos_token_id)
        if not self.eos_ids:
            raise LLMError("the model and tokenizer name no eos token id")
        return self

    # -- public ---------------------------------------------------------------------------------
    def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], params: SamplingParams
    ) -> list[list[Generation]]:
        if params.n < 1:
            raise LLMError(f"n must be >= 1, got {params.n}")
        if params.max_new_tokens < 1:
            raise LLMError(f"max_new_tokens must be >= 1, got {params.max_new_tokens}")
        if params.temperature < 0:
            raise LLMError(f"temperature must be >= 0, got {params.temperature}")
        base = params.seed if params.seed is not None else int.from_bytes(os.urandom(4), "little")
        prompts = [self._render(conv) for conv in conversations]
        ids = [self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        # one row per completion: (conversation, sample); longest first so batches pad little
        rows = [(c, j) for c in range(len(conversations)) for j in range(params.n)]
        rows.sort(key=lambda cj: (-len(ids[cj[0]]), cj))
        results: dict[tuple[int, int], Generation] = {}
        for start in range(0, len(rows), self.batch_size):
            chunk = rows[start : start + self.batch_size]
            gens = self._generate_rows(
                [ids[c] for c, _ in chunk], [sequence_seed(base + c, j) for c, j in chunk], params
            )
            results.update(zip(chunk, gens))
        return [[results[(c, j)] for j in range(params.n)] for c in range(len(conversations))]

    def generate_ids(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[list[Generation]]:
        """Continue raw token sequences (no chat template): what multi-turn rollouts use, so the
        model conditions on exactly the ids the trajectory holds. Same seeding as
        :meth:`generate`; ``n`` completions per prompt."""
        if params.n < 1 or params.max_new_tokens < 1 or params.temperature < 0:
            raise LLMError("n and max_new_tokens must be >= 1 and temperature >= 0")
        if any(not p for p in prompts):
            raise LLMError("every prompt needs at least one token")
        base = params.seed if params.seed is not None else int.from_bytes(os.urandom(4), "little")
        rows = [(c, j) for c in range(len(prompts)) for j in range(params.n)]
        rows.sort(key=lambda cj: (-len(prompts[cj[0]]), cj))
        results: dict[tuple[int, int], Generation] = {}
        for start in range(0, len(rows), self.batch_size):
            chunk = rows[start : start + self.batch_size]
            gens = self._generate_rows(
                [list(prompts[c]) for c, _ in chunk], [sequence_seed(base + c, j) for c, j in chunk], params
            )
            results.update(zip(chunk, gens))
        return [[results[(c, j)] for j in range(params.n)] for c in range(len(prompts))]

    def close(self) -> None:
        self.model = None  # type: ignore[assignment]
        gc.collect()

    # -- internals ------------------------------------------------------------------------------
    def _render(self, conversation: Sequence[ChatMessage]) -> str:
        try:
            return self.tokenizer.apply_chat_template(
                [dict(m) for m in conversation], tokenize=False, add_generation_prompt=True
            )
        except Exception as exc:
            raise LLMError(f"chat template of {self.model_name} failed: {exc}") from exc

    def _generate_rows(self, row_ids: list[list[int]], seeds: list[int], params: SamplingParams) -> list[Generation]:
        pad = self.tokenizer.pad_token_id
        width = max(len(r) for r in row_ids)
        input_ids = torch.tensor([[pad] * (width - len(r)) + r for r in row_ids], dtype=torch.long)
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in row_ids], dtype=torch.long)
        tracker = _StopTracker(self.tokenizer, width, len(row_ids), self.eos_ids, params.stop)
        processors = LogitsProcessorList()
        if params.temperature > 0:
            generators = [torch.Generator(device=self.device).manual_seed(s) for s in seeds]
            processors.append(_RowSampler(generators, params))
        config = GenerationConfig(
            max_new_tokens=params.max_new_tokens,
            do_sample=False,
            num_beams=1,
            pad_token_id=pad,
            eos_token_id=sorted(self.eos_ids),
        )
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=mask.to(self.device),
                generation_config=config,
                logits_processor=processors,
                stopping_criteria=StoppingCriteriaList([tracker]),
            )
        latency = time.perf_counter() - t0
        gens = []
        for r, prompt in enumerate(row_ids):
            n_tok = tracker.lengths[r]
            tokens = out[r, width : width + n_tok].tolist()
            text = self.tokenizer.decode(tokens, skip_special_tokens=True)
            text, hit = _cut(text, params.stop)
            reason = hit if hit is not None else ("eos" if tracker.reasons[r] == "eos" else "length")
            gens.append(
                Generation(
                    text=text,
                    prompt_tokens=len(prompt),
                    completion_tokens=n_tok,
                    stop_reason=reason,
                    latency_s=latency,
                    token_ids=tuple(tokens),
                )
            )
        return gens
