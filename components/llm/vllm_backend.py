"""In-process batched generation on a CUDA GPU with vLLM (the optional ``gpu`` extra).

``vllm`` is imported only when a backend is created, so CPU machines never need it. Conversation
``i`` is one vLLM request with ``seed + i`` (or ``seeds[i]``) and ``n`` completions (the seeding contract of
:class:`~components.llm.base.SamplingParams`); ``LLM.chat`` applies the model's chat template
(or ``chat_template``) with the generation prompt. vLLM cuts stop strings from the text and names
the one that matched in ``stop_reason``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from components.llm.base import (
    ChatMessage,
    Generation,
    LLMError,
    SamplingParams,
    continues,
    register_backend,
)
from components.llm.registry import model_folder

__all__ = ["VLLMBackend", "to_vllm_sampling"]

_MISSING = "vllm is not installed: pip install '.[gpu]' on a CUDA machine"


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise LLMError(_MISSING) from exc
    return vllm


def to_vllm_sampling(vllm: Any, params: SamplingParams, i: int) -> Any:
    """``vllm.SamplingParams`` for conversation ``i`` (``temperature == 0`` is greedy in vLLM too;
    ``top_k == 0`` disables top-k in both)."""
    return vllm.SamplingParams(
        n=params.n,
        seed=params.request_seed(i),
        stop=list(params.stop) or None,
        temperature=params.temperature,
        top_p=params.top_p,
        top_k=params.top_k,
        max_tokens=params.max_new_tokens,
    )


@register_backend("vllm")
class VLLMBackend:
    """``model_dir``: a registered model name or a local HF folder (default: the converted
    SmolLM2). Extra keyword arguments go to ``vllm.LLM`` (e.g. ``tensor_parallel_size``, ``enforce_eager``)."""

    name = "vllm"

    def __init__(
        self,
        model_dir: Path | str | None = None,
        *,
        dtype: str = "auto",
        gpu_memory_utilization: float = 0.85,
        max_model_len: int | None = 4096,
        chat_template: str | None = None,
        **llm_kwargs: Any,
    ) -> None:
        self._vllm = _import_vllm()
        path = model_folder(model_dir)
        self.model_name = str(path)
        self.chat_template = chat_template
        try:
            self._llm = self._vllm.LLM(
                model=str(path),
                dtype=dtype,
                gpu_memory_utilization=gpu_memory_utilization,
                max_model_len=max_model_len,
                **llm_kwargs,
            )
        except Exception as exc:  # vLLM raises many kinds (CUDA, config, OOM)
            raise LLMError(f"vllm could not load {path}: {exc}") from exc

    @classmethod
    def wrap(cls, llm: Any, tokenizer: Any | None = None, *, chat_template: str | None = None) -> VLLMBackend:
        """A backend over an already running ``vllm.LLM`` (e.g. TRL's colocated engine, whose
        weights TRL syncs from the policy before each rollout), without loading anything."""
        self = cls.__new__(cls)
        self._vllm = _import_vllm()
        self._llm, self.chat_template = llm, chat_template
        self._tokenizer = tokenizer
        model_config = getattr(getattr(llm, "llm_engine", None), "model_config", None)
        self.model_name = str(getattr(model_config, "model", "vllm"))
        return self

    @property
    def tokenizer(self) -> Any:
        """The engine's tokenizer (what the rollout runner templates and decodes with)."""
        if getattr(self, "_tokenizer", None) is None:
            self._tokenizer = self._llm.get_tokenizer()
        return self._tokenizer

    def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], params: SamplingParams
    ) -> list[list[Generation]]:
        if not conversations:
            return []
        prefixed = {continues(conv) for conv in conversations}
        if len(prefixed) > 1:
            raise LLMError("vLLM continues every conversation of a call or none: split assistant prefixes into a call")
        prefix = prefixed.pop()
        sampling = [to_vllm_sampling(self._vllm, params, i) for i in range(len(conversations))]
        t0 = time.perf_counter()
        outputs = self._llm.chat(
            [[dict(m) for m in conv] for conv in conversations],
            sampling_params=sampling,
            use_tqdm=False,
            chat_template=self.chat_template,
            add_generation_prompt=not prefix,
            continue_final_message=prefix,
        )
        return self._collect(outputs, time.perf_counter() - t0)

    def generate_ids(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[list[Generation]]:
        """Continue raw token sequences (multi-turn rollouts; see the transformers backend)."""
        if not prompts:
            return []
        sampling = [to_vllm_sampling(self._vllm, params, i) for i in range(len(prompts))]
        t0 = time.perf_counter()
        outputs = self._llm.generate(
            [{"prompt_token_ids": list(p)} for p in prompts], sampling_params=sampling, use_tqdm=False
        )
        return self._collect(outputs, time.perf_counter() - t0)

    @staticmethod
    def _collect(outputs: Sequence[Any], latency: float) -> list[list[Generation]]:
        result = []
        for out in outputs:
            prompt_tokens = len(out.prompt_token_ids or ())
            gens = []
            for c in sorted(out.outputs, key=lambda c: c.index):
                if c.finish_reason == "length":
                    reason = "length"
                elif isinstance(c.stop_reason, str):
                    reason = c.stop_reason
                else:
                    reason = "eos"
                gens.append(
                    Generation(
                        text=c.text,
                        prompt_tokens=prompt_tokens,
                        completion_tokens=len(c.token_ids),
                        stop_reason=reason,
                        latency_s=latency,
                        token_ids=tuple(c.token_ids),
                    )
                )
            result.append(gens)
        return result

    def close(self) -> None:
        self._llm = None
