"""Supervised warm-start on trajectories, with environment tokens masked (TRL 1.16 ``SFTTrainer``).

A trajectory (:class:`~components.rollout.runner.RolloutRecord`) becomes one pre-tokenised
example: ``input_ids = prompt_ids + completion_ids`` and ``labels`` equal to the ids on the
model's own tokens and ``-100`` on the prompt and on every environment-inserted token
(``loss_mask == 0``), so the warm-start teaches the model to write steps and answers, never tool
results. TRL uses a ``labels`` column as given.

:func:`run_sft` trains a local Hugging Face model folder on such examples and saves the result
(``save_pretrained`` + tokenizer) with the per-step losses. On CPU it uses TRL's CPU settings
(``use_cpu``, bf16 mixed precision where native, no activation checkpointing, no reporting).

**Only labelled positions reach the LM head** (:func:`span_sft_trainer`): a trajectory's loss is
on the model's own tokens (~150 of ~600 positions); the backbone runs over the whole sequence,
but the vocabulary projection (49,152 × 576 for SmolLM2) and its backward run only where a label
is set — the same loss as TRL's full-sequence kernel (tested), a quarter of its head work.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SFTRunConfig", "SFTResult", "run_sft", "sft_example"]


def sft_example(
    prompt_ids: Sequence[int], completion_ids: Sequence[int], loss_mask: Sequence[int]
) -> dict[str, list[int]]:
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
    precision: str = "auto"  # components/llm/precision.py: bfloat16 autocast where native
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


def span_loss(model: Any, inputs: dict[str, Any], num_items_in_batch: Any = None) -> Any:
    """Mean next-token cross-entropy over the labelled positions (labels ≠ -100), the LM head
    applied to those positions only; divided by ``num_items_in_batch`` when the trainer counts
    the labelled tokens of an accumulated step."""
    import torch

    labels = inputs["labels"][:, 1:]
    mask = labels != -100
    backbone = getattr(model, model.base_model_prefix)
    hidden = backbone(
        input_ids=inputs["input_ids"], attention_mask=inputs.get("attention_mask"), use_cache=False
    ).last_hidden_state[:, :-1]
    logits = model.get_output_embeddings()(hidden[mask]).float()
    total = torch.nn.functional.cross_entropy(logits, labels[mask], reduction="sum")
    count = mask.sum() if num_items_in_batch is None else num_items_in_batch
    return total / torch.as_tensor(count).clamp(min=1)


def span_sft_trainer() -> type:
    """``SFTTrainer`` whose loss is :func:`span_loss` (pre-tokenised examples with ``labels``)."""
    from trl import SFTTrainer

    class SpanSFTTrainer(SFTTrainer):
        def compute_loss(self, model: Any, inputs: Any, return_outputs: bool = False, num_items_in_batch: Any = None):
            loss = span_loss(model, inputs, num_items_in_batch)
            return (loss, None) if return_outputs else loss

    return SpanSFTTrainer


def run_sft(
    model_dir: str | Path,
    examples: Sequence[dict[str, list[int]]],
    output_dir: str | Path,
    config: SFTRunConfig = SFTRunConfig(),
) -> SFTResult:
    """Fine-tune ``model_dir`` on ``examples`` (from :func:`sft_example`); see the module docstring."""
    from datasets import Dataset
    from trl import SFTConfig

    from components.training._common import common_args, load, train_and_save

    if not examples:
        raise ValueError("no training examples")
    if any(all(label == -100 for label in e["labels"]) for e in examples):
        raise ValueError("an example has no model token to learn from (all labels are -100)")
    model, tokenizer = load(model_dir, config.threads)
    args = SFTConfig(
        max_steps=config.max_steps,
        learning_rate=config.learning_rate,
        per_device_train_batch_size=config.batch_size,
        max_length=config.max_length,
        **common_args(output_dir, config.seed, config.precision),
    )
    trainer = span_sft_trainer()(
        model=model, args=args, train_dataset=Dataset.from_list([dict(e) for e in examples]), processing_class=tokenizer
    )
    log = train_and_save(trainer, tokenizer, output_dir)
    losses = [float(h["loss"]) for h in log if "loss" in h]
    return SFTResult(str(output_dir), losses, int(trainer.state.global_step), len(examples), asdict(config))
