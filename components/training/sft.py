"""Supervised warm-start on trajectories, with environment tokens masked (TRL 1.16 ``SFTTrainer``).

A trajectory (:class:`~components.rollout.runner.RolloutRecord`) becomes one pre-tokenised
example: ``input_ids = prompt_ids + completion_ids`` and ``labels`` equal to the ids on the
model's own tokens and ``-100`` on the prompt and on every environment-inserted token
(``loss_mask == 0``), so the warm-start teaches the model to write steps and answers, never tool
results. TRL uses a ``labels`` column as given.

:func:`run_sft` trains a local Hugging Face model folder on such examples and saves the result
(``save_pretrained`` + tokenizer) with the per-step losses. On CPU it uses TRL's CPU settings
(``use_cpu``, no bf16, no activation checkpointing, no reporting).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SFTRunConfig", "SFTResult", "run_sft", "sft_example"]


def sft_example(prompt_ids: Sequence[int], completion_ids: Sequence[int], loss_mask: Sequence[int]) -> dict[str, list[int]]:
    """``{"input_ids", "labels"}`` with ``-100`` on the prompt and the environment's tokens.

    >>> sft_example([1, 2], [3, 4, 5], [1, 0, 1])
    {'input_ids': [1, 2, 3, 4, 5], 'labels': [-100, -100, 3, -100, 5]}
    """
    if len(completion_ids) != len(loss_mask):
        raise ValueError("loss_mask must have one entry per completion token")
    labels = [-100] * len(prompt_ids) + [t if m else -100 for t, m in zip(completion_ids, loss_mask, strict=True)]
    return {"input_ids": list(prompt_ids) + list(completion_ids), "labels": labels}


@dataclass(frozen=True)
class SFTRunConfig:
    max_steps: int = 20
    learning_rate: float = 1e-3
    batch_size: int = 4
    max_length: int = 2048
    seed: int = 0
    threads: int | None = None
    logging_steps: int = 1


@dataclass
class SFTResult:
    output_dir: str
    losses: list[float] = field(default_factory=list)
    steps: int = 0
    examples: int = 0
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def first_loss(self) -> float:
        return self.losses[0] if self.losses else math.nan

    @property
    def last_loss(self) -> float:
        return self.losses[-1] if self.losses else math.nan


def run_sft(model_dir: str | Path, examples: Sequence[dict[str, list[int]]], output_dir: str | Path,
            config: SFTRunConfig = SFTRunConfig()) -> SFTResult:
    """Fine-tune ``model_dir`` on ``examples`` (from :func:`sft_example`); see the module docstring."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    if not examples:
        raise ValueError("no training examples")
    if any(all(label == -100 for label in e["labels"]) for e in examples):
        raise ValueError("an example has no model token to learn from (all labels are -100)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if config.threads:
        torch.set_num_threads(config.threads)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    args = SFTConfig(
        output_dir=str(output_dir), max_steps=config.max_steps, learning_rate=config.learning_rate,
        per_device_train_batch_size=config.batch_size, max_length=config.max_length, seed=config.seed,
        logging_steps=config.logging_steps, save_strategy="no", report_to="none", use_cpu=not torch.cuda.is_available(),
        bf16=False, activation_checkpointing=False, disable_tqdm=True,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list([dict(e) for e in examples]),
                         processing_class=tokenizer)
    trainer.train()
    losses = [float(h["loss"]) for h in trainer.state.log_history if "loss" in h]
    trainer.save_model(str(output_dir))
    tokenizer.save_pretrained(str(output_dir))
    return SFTResult(str(output_dir), losses, int(trainer.state.global_step), len(examples), asdict(config))
