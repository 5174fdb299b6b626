"""Generation backends behind one interface (:class:`GenerationBackend`): ``transformers`` (CPU
default, SmolLM2-135M-Instruct), ``vllm`` (CUDA, optional ``gpu`` extra) and ``openai`` (any
OpenAI-compatible endpoint). Configs pick one by name through :func:`make_backend`.

Backend modules are imported lazily, so ``import components.llm`` does not load torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from components.llm.base import (
    BACKENDS,
    ChatMessage,
    Generation,
    GenerationBackend,
    LLMError,
    SamplingParams,
    register_backend,
)
from components.llm.models import (
    default_cache_root,
    load_model_dir,
    qwen25_chat_template,
    smollm2_gguf_path,
    smollm2_hf_dir,
    tiny_random_model,
)

__all__ = [
    "BACKENDS",
    "ChatMessage",
    "Generation",
    "GenerationBackend",
    "LLMError",
    "SamplingParams",
    "default_cache_root",
    "load_model_dir",
    "make_backend",
    "qwen25_chat_template",
    "register_backend",
    "smollm2_gguf_path",
    "smollm2_hf_dir",
    "tiny_random_model",
]

# name -> module that registers it (imported on first use; keeps torch out of plain imports)
_BUILTIN = {
    "transformers": "components.llm.transformers_backend",
    "openai": "components.llm.openai_backend",
    "vllm": "components.llm.vllm_backend",
}


def make_backend(name: str, **options: Any) -> GenerationBackend:
    """Create the backend registered as ``name`` with ``options`` (its constructor's arguments).

    >>> make_backend("nope")
    Traceback (most recent call last):
    ...
    components.llm.base.LLMError: unknown generation backend 'nope'; valid: openai, transformers, vllm
    """
    if name not in BACKENDS and name in _BUILTIN:
        importlib.import_module(_BUILTIN[name])
    if name not in BACKENDS:
        valid = ", ".join(sorted(set(BACKENDS) | set(_BUILTIN)))
        raise LLMError(f"unknown generation backend {name!r}; valid: {valid}")
    return BACKENDS[name](**options)


def __getattr__(attr: str) -> Any:
    """Lazy access to the backend classes: ``components.llm.TransformersBackend`` etc."""
    lazy = {
        "TransformersBackend": "components.llm.transformers_backend",
        "OpenAIBackend": "components.llm.openai_backend",
        "VLLMBackend": "components.llm.vllm_backend",
    }
    if attr in lazy:
        return getattr(importlib.import_module(lazy[attr]), attr)
    raise AttributeError(f"module 'components.llm' has no attribute {attr!r}")
