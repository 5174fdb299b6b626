"""Precision names: ``auto`` follows the hardware unless ``GRAPHDOJO_PRECISION`` names one; the
configs that take a precision record the resolved name and refuse unknown ones."""

from __future__ import annotations

import pytest
import torch

from components.evaluation.agents import EvalConfig
from components.llm.precision import native_bf16, resolve_precision, torch_dtype
from components.training.checkpoint import TrainConfig
from components.training.preferences import preference_config


def test_auto_follows_the_hardware_and_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRAPHDOJO_PRECISION", raising=False)
    assert resolve_precision("auto") == ("bfloat16" if native_bf16() else "float32")
    assert resolve_precision(None) == resolve_precision("auto")
    monkeypatch.setenv("GRAPHDOJO_PRECISION", "float32")
    assert resolve_precision("auto") == "float32" and torch_dtype("auto") == torch.float32
    assert resolve_precision("bfloat16") == "bfloat16"  # an explicit name wins over the environment
    monkeypatch.setenv("GRAPHDOJO_PRECISION", "fp8")
    with pytest.raises(ValueError, match="GRAPHDOJO_PRECISION"):
        resolve_precision("auto")


def test_configs_record_the_resolved_precision_and_refuse_unknown_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHDOJO_PRECISION", "float32")
    assert TrainConfig().resolved()["precision"] == "float32"
    assert TrainConfig(precision="bfloat16").resolved()["precision"] == "bfloat16"
    assert preference_config(TrainConfig(precision="bfloat16")).precision == "bfloat16"
    with pytest.raises(ValueError, match="unknown precision"):
        TrainConfig(precision="half")
    with pytest.raises(ValueError, match="unknown precision"):
        EvalConfig(precision="int4")
