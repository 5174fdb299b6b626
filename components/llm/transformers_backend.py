"""The CPU default generation backend: a Hugging Face ``transformers`` model folder
(SmolLM2-135M-Instruct unless told otherwise), generating through the multi-turn
:class:`~components.llm.engine.Engine` (KV reuse across turns, shared prefixes once, batched
sampling, finished rows dropped).

Seeds. Completion ``j`` of conversation ``i`` of a call samples from its own random stream,
seeded from ``(params.seed + i, j)`` (or ``(params.seeds[i], j)``: :func:`sequence_seed`), so a
batched call returns the same texts as the same conversations sent one by one with ``seed + i``
(up to float rounding of batched matmuls, which can flip a token whose cumulative probability
sits exactly on a boundary).

Stops. A row finishes on an EOS token or when its decoded completion contains a stop string; the
returned text is cut before the first stop string; ``completion_tokens`` counts the tokens
generated up to and including the one that finished the row.

``latency_s`` of a :class:`~components.llm.base.Generation` is the wall time of the batch (up to
``batch_size`` rows) that produced it.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from components.llm.base import (
    ChatMessage,
    Generation,
    LLMError,
    SamplingParams,
    continues,
    mixed_seed,
    register_backend,
)
from components.llm.engine import Engine
from components.llm.precision import PRECISIONS, resolve_precision
from components.llm.registry import model_folder

__all__ = ["TransformersBackend", "sequence_seed"]

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def sequence_seed(base: int, sample: int) -> int:
    """The generator seed for completion ``sample`` of a conversation whose seed is ``base``
    (:func:`~components.llm.base.mixed_seed`: nearby pairs do not collide)."""
    return mixed_seed(base, sample)


@register_backend("transformers")
class TransformersBackend:
    """Batched chat generation with ``transformers`` (see the module docstring for seeding).

    ``model_dir``: a registered model name (``smollm2-135m``, ``qwen2.5-coder-0.5b``,
    ``qwen2.5-coder-1.5b``: :mod:`components.llm.registry`, converted once under ``data/models``)
    or any local Hugging Face causal-LM folder; default SmolLM2-135M-Instruct. ``chat_template``
    overrides the tokenizer's template (Jinja source).
    ``dtype``: ``auto`` (bfloat16 where the hardware multiplies it natively, else float32 —
    :mod:`components.llm.precision`), ``float32``, ``bfloat16`` or ``float16``; ``self.dtype`` is
    the resolved name.
    """

    name = "transformers"

    def __init__(
        self,
        model_dir: Path | str | None = None,
        *,
        device: str = "cpu",
        dtype: str = "auto",
        threads: int | None = None,
        batch_size: int = 128,
        chat_template: str | None = None,
    ) -> None:
        if dtype not in _DTYPES and dtype not in PRECISIONS:
            raise LLMError(f"unknown dtype {dtype!r}; expected auto or one of {', '.join(_DTYPES)}")
        dtype = dtype if dtype in _DTYPES else resolve_precision(dtype, device)
        self.dtype = dtype
        if batch_size < 1:
            raise LLMError(f"batch_size must be >= 1, got {batch_size}")
        if threads:
            torch.set_num_threads(int(threads))
        path = model_folder(model_dir)
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
        self.engine = Engine(self.model, self.tokenizer, eos_ids, batch_size=batch_size)

    @classmethod
    def wrap(cls, model: Any, tokenizer: Any, *, batch_size: int = 128) -> TransformersBackend:
        """A backend over an already loaded model and tokenizer (e.g. the policy a trainer is
        updating), without loading anything; generation runs under ``inference_mode`` in the
        model's own dtype."""
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
        self.dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
        self.engine = Engine(model, tokenizer, self.eos_ids, batch_size=batch_size)
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
        prompts = [self._render(conv) for conv in conversations]
        return self._generate([self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts], params)

    def generate_ids(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[list[Generation]]:
        """Continue raw token sequences (no chat template): what multi-turn rollouts use, so the
        model conditions on exactly the ids the trajectory holds. Same seeding as
        :meth:`generate`; ``n`` completions per prompt."""
        if params.n < 1 or params.max_new_tokens < 1 or params.temperature < 0:
            raise LLMError("n and max_new_tokens must be >= 1 and temperature >= 0")
        if any(not p for p in prompts):
            raise LLMError("every prompt needs at least one token")
        return self._generate([list(p) for p in prompts], params)

    def close(self) -> None:
        self.model = None  # type: ignore[assignment]
        self.engine = None  # type: ignore[assignment]
        gc.collect()

    # -- internals ------------------------------------------------------------------------------
    def _generate(self, prompts: list[list[int]], params: SamplingParams) -> list[list[Generation]]:
        """``n`` completions per prompt through the engine, completion ``j`` of prompt ``c``
        seeded from ``(seed + c, j)`` (``(seeds[c], j)``)."""
        if params.seeds is not None and len(params.seeds) != len(prompts):
            raise LLMError(f"{len(params.seeds)} seeds for {len(prompts)} prompts")
        unseeded = int.from_bytes(os.urandom(4), "little")
        bases = [params.request_seed(c) for c in range(len(prompts))]
        rows = [(c, j) for c in range(len(prompts)) for j in range(params.n)]
        gens = self.engine.generate(
            [prompts[c] for c, _ in rows],
            [sequence_seed(unseeded + c if bases[c] is None else bases[c], j) for c, j in rows],
            params,
        )
        out: list[list[Generation]] = [[] for _ in prompts]
        for (c, _), g in zip(rows, gens, strict=True):
            out[c].append(g)
        return out

    def _render(self, conversation: Sequence[ChatMessage]) -> str:
        messages = [dict(m) for m in conversation]
        prefix = continues(messages)
        try:
            return self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=not prefix, continue_final_message=prefix
            )
        except Exception as exc:
            raise LLMError(f"chat template of {self.model_name} failed: {exc}") from exc
