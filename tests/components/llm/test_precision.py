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


def test_what_auto_resolves_to_enters_the_quiz_judge_and_eval_fingerprints(monkeypatch: pytest.MonkeyPatch) -> None:
    from components.certify.dataset import CertifyConfig, certify_params
    from components.evaluation.run import EvalPlan
    from components.quizzer.run import QuizConfig, _params

    def fingerprints() -> tuple:
        quiz = _params(QuizConfig(llm_n=1))["model_identity"]["precision"]
        judge = certify_params(CertifyConfig(judge="on"))["judge_identity"]["precision"]
        return quiz, judge, EvalPlan(EvalConfig(), TrainConfig()).params()["precision"]

    monkeypatch.setenv("GRAPHDOJO_PRECISION", "float32")
    assert fingerprints() == ("float32",) * 3
    monkeypatch.setenv("GRAPHDOJO_PRECISION", "bfloat16")
    assert fingerprints() == ("bfloat16",) * 3
    assert (
        _params(QuizConfig(llm_n=1, backend_options={"dtype": "float16"}))["model_identity"]["precision"] == "float16"
    )
    assert _params(QuizConfig(llm_n=0))["model_identity"] == {}  # no model ran: nothing to record
