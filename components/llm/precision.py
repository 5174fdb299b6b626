"""Which floating-point precision models compute in.

``auto`` (the default everywhere) picks **bfloat16** where the hardware multiplies it natively —
a CUDA device with bf16 support, or a CPU with AMX tiles or AVX-512 BF16 (Intel Sapphire Rapids
and later, AMD Zen 4 and later) — and **float32** elsewhere. On the 2-core development machines
(AMX) bfloat16 measured 1.5× faster generation and 2× faster training steps than float32
(docs/benchmarks.md). ``float32`` / ``bfloat16`` force one. ``GRAPHDOJO_PRECISION`` overrides
``auto`` for a whole process (e.g. ``float32`` to reproduce a run made on a machine without bf16).

Everything that records what it trained or evaluated records the *resolved* name, never
``auto``, so fingerprints and reports say what actually ran.
"""

from __future__ import annotations

import os
from typing import Any, Final

__all__ = ["PRECISIONS", "dtype_name", "native_bf16", "resolve_precision", "torch_dtype"]

PRECISIONS: Final = ("auto", "float32", "bfloat16")


def native_bf16(device: str = "cpu") -> bool:
    """Whether ``device`` multiplies bfloat16 natively (see the module docstring)."""
    import torch

    if str(device).startswith("cuda"):
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    cpu = torch.cpu
    probes = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(bool(getattr(cpu, name, lambda: False)()) for name in probes)


def resolve_precision(name: str | None = "auto", device: str = "cpu") -> str:
    """``float32`` or ``bfloat16`` for a requested precision (``auto`` / ``None`` decided by the
    hardware unless ``GRAPHDOJO_PRECISION`` names one). Unknown names are a ``ValueError``."""
    name = name or "auto"
    if name not in PRECISIONS:
        raise ValueError(f"unknown precision {name!r}; expected one of {', '.join(PRECISIONS)}")
    if name != "auto":
        return name
    forced = os.environ.get("GRAPHDOJO_PRECISION", "").strip()
    if forced and forced != "auto":
        if forced not in PRECISIONS:
            raise ValueError(f"GRAPHDOJO_PRECISION={forced!r}; expected one of {', '.join(PRECISIONS)}")
        return forced
    return "bfloat16" if native_bf16(device) else "float32"


def dtype_name(dtype: str | None) -> str:
    """A backend ``dtype`` option as it ran, for fingerprints: ``auto`` / unset resolved
    (:func:`resolve_precision`), any explicit name (``float16`` too) as given."""
    return resolve_precision("auto") if dtype in (None, "auto") else str(dtype)


def torch_dtype(name: str | None = "auto", device: str = "cpu") -> Any:
    """The ``torch.dtype`` of :func:`resolve_precision`."""
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16}[resolve_precision(name, device)]
