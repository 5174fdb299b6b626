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

__all__ = ["LORA_DEFAULTS", "SFTRunConfig", "SFTResult", "lora_model", "run_sft", "sft_example", "time_budget_callback"]

#: LoRA settings unless a config says otherwise: rank, scaling numerator, dropout
LORA_DEFAULTS: dict[str, Any] = {"r": 16, "alpha": 32, "dropout": 0.0}


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
    #: stop after the optimizer step that passes this many seconds of training (None: max_steps only)
    max_seconds: float | None = None
    #: LoRA instead of full fine-tuning (``peft``): ``{"r": 16, "alpha": 32}`` on every linear layer
    #: of the backbone; the adapter is merged into the saved weights (a plain Hugging Face folder)
    lora: dict[str, Any] | None = None
    #: run the prompt prefix every example of a batch shares once (:func:`span_loss`)
    share_prefix: bool = False


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


def shared_prefix(input_ids: Any, labels: Any, attention_mask: Any = None) -> int:
    """How many leading positions every row of the batch shares and none of them learns from:
    identical tokens, attended to, unlabelled — and the position after the last of them is
    unlabelled too (its hidden state predicts it). 0 for a batch of one.

    >>> import torch
    >>> ids = torch.tensor([[1, 2, 3, 4, 5], [1, 2, 3, 9, 9]])
    >>> shared_prefix(ids, torch.tensor([[-100, -100, -100, -100, 5], [-100, -100, -100, -100, 9]]))
    2
    """
    if input_ids.shape[0] < 2:
        return 0
    ok = (input_ids == input_ids[:1]).all(0) & (labels == -100).all(0)
    if attention_mask is not None:
        ok &= (attention_mask == 1).all(0)
    bad = (~ok).nonzero()
    first = int(bad[0]) if len(bad) else int(input_ids.shape[1])
    return max(0, first - 1)


def span_loss(model: Any, inputs: dict[str, Any], num_items_in_batch: Any = None, *, share_prefix: bool = False) -> Any:
    """Mean next-token cross-entropy over the labelled positions (labels ≠ -100), the LM head
    applied to those positions only; divided by ``num_items_in_batch`` when the trainer counts
    the labelled tokens of an accumulated step.

    ``share_prefix``: the leading tokens every row shares (:func:`shared_prefix`: the
    environment's instructions and schema, the same in every trajectory) run through the
    backbone once, with gradients, and their keys and values are repeated for every row — the
    same loss and gradients as running each row in full (tested), without recomputing the
    common prompt per row.

    A data-parallel model (:func:`~components.training._common.is_wrapped`) runs its full
    forward through the wrapper, which synchronises the gradients (the same loss; the head runs
    over every position)."""
    import torch

    from components.training._common import is_wrapped

    ids, attention = inputs["input_ids"], inputs.get("attention_mask")
    labels = inputs["labels"][:, 1:]
    if is_wrapped(model):
        mask = labels != -100
        logits = model(input_ids=ids, attention_mask=attention, use_cache=False).logits[:, :-1][mask]
    else:
        # a peft model: its LoRA-injected base
        inner = model.get_base_model() if hasattr(model, "get_base_model") else model
        backbone = getattr(inner, inner.base_model_prefix)
        start = shared_prefix(ids, inputs["labels"], attention) if share_prefix else 0
        if start >= 2:
            cache = backbone(input_ids=ids[:1, :start], use_cache=True).cache
            cache.batch_repeat_interleave(int(ids.shape[0]))
            hidden = backbone(
                input_ids=ids[:, start:], attention_mask=attention, cache=cache, use_cache=True
            ).last_hidden_state[:, :-1]
            labels = inputs["labels"][:, start + 1 :]
        else:
            hidden = backbone(input_ids=ids, attention_mask=attention, use_cache=False).last_hidden_state[:, :-1]
        mask = labels != -100
        logits = inner.get_output_embeddings()(hidden[mask])
    total = torch.nn.functional.cross_entropy(logits.float(), labels[mask], reduction="sum")
    count = mask.sum() if num_items_in_batch is None else num_items_in_batch
    return total / torch.as_tensor(count).clamp(min=1)


def lora_model(model: Any, options: dict[str, Any]) -> Any:
    """``model`` with LoRA adapters (``peft``) on every linear layer except the LM head; only the
    adapters train. ``options``: ``r``, ``alpha``, ``dropout`` (:data:`LORA_DEFAULTS`)."""
    from peft import LoraConfig, get_peft_model

    unknown = set(options) - set(LORA_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown LoRA options {sorted(unknown)}; known: {sorted(LORA_DEFAULTS)}")
    o = {**LORA_DEFAULTS, **options}
    cfg = LoraConfig(
        r=int(o["r"]),
        lora_alpha=int(o["alpha"]),
        lora_dropout=float(o["dropout"]),
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, cfg)


def time_budget_callback(seconds: float) -> Any:
    """A ``TrainerCallback`` that ends training after the first optimizer step that finishes
    ``seconds`` or more after training began (the step in flight is completed, never cut)."""
    import time

    from transformers import TrainerCallback

    class TimeBudget(TrainerCallback):
        t0 = 0.0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.t0 = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if time.perf_counter() - self.t0 >= seconds:
                control.should_training_stop = True

    return TimeBudget()


def span_sft_trainer(share_prefix: bool = False) -> type:
    """``SFTTrainer`` whose loss is :func:`span_loss` (pre-tokenised examples with ``labels``)."""
    from trl import SFTTrainer

    class SpanSFTTrainer(SFTTrainer):
        def compute_loss(self, model: Any, inputs: Any, return_outputs: bool = False, num_items_in_batch: Any = None):
            loss = span_loss(model, inputs, num_items_in_batch, share_prefix=share_prefix)
            if num_items_in_batch is not None and self.args.average_tokens_across_devices:
                # the token count is the global batch's: data-parallel averaging of the gradients
                # divides by the process count again (transformers' own compute_loss does this)
                loss = loss * self.accelerator.num_processes
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

    from components.training._common import common_args, load, per_process, train_and_save

    if not examples:
        raise ValueError("no training examples")
    if any(all(label == -100 for label in e["labels"]) for e in examples):
        raise ValueError("an example has no model token to learn from (all labels are -100)")
    # LoRA freezes the base weights (its float32 adapters train): they may compute in bfloat16
    frozen = config.precision if config.lora is not None else None
    model, tokenizer = load(model_dir, config.threads, frozen_precision=frozen)
    if config.lora is not None:
        from transformers import set_seed

        set_seed(config.seed)  # the adapters' random initialisation is the run's seed's, in every process
        model = lora_model(model, config.lora)
    args = SFTConfig(
        max_steps=config.max_steps,
        learning_rate=config.learning_rate,
        per_device_train_batch_size=per_process(config.batch_size),  # the same global batch on N processes
        max_length=config.max_length,
        **common_args(output_dir, config.seed, config.precision),
    )
    trainer = span_sft_trainer(config.share_prefix)(
        model=model, args=args, train_dataset=Dataset.from_list([dict(e) for e in examples]), processing_class=tokenizer
    )
    if config.max_seconds is not None:
        trainer.add_callback(time_budget_callback(config.max_seconds))
    log = train_and_save(trainer, tokenizer, output_dir, merge=config.lora is not None)
    losses = [float(h["loss"]) for h in log if "loss" in h]
    return SFTResult(str(output_dir), losses, int(trainer.state.global_step), len(examples), asdict(config))
