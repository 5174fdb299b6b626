"""DPO on multi-turn trajectories with environment tokens masked (TRL 1.16 ``DPOTrainer``).

TRL's DPO tokenises text pairs and scores every completion token. Our pairs are trajectories:
``prompt_ids`` and, for *chosen* and *rejected*, the completion ids with their loss masks (model
tokens 1, environment tokens 0). :class:`MaskedDPOTrainer` therefore takes the pre-tokenised
pairs as they are and builds the completion mask from the loss masks (:class:`MaskedPreferenceCollator`),
so a sequence's log-probability sums the model's own tokens only — the environment's
observations condition the policy but are never part of what it is rewarded for preferring.

The reference model is a frozen copy of the starting policy (in GraphDancer's stage 2: the stage-1 checkpoint).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from components.training.grpo import TrainResult

__all__ = ["DPORunConfig", "preference_example", "run_dpo"]


def preference_example(
    prompt_ids: Sequence[int],
    chosen: tuple[Sequence[int], Sequence[int]],
    rejected: tuple[Sequence[int], Sequence[int]],
) -> dict[str, list[int]]:
    """One pair: ``chosen`` / ``rejected`` are ``(completion_ids, loss_mask)``."""
    for ids, mask in (chosen, rejected):
        if len(ids) != len(mask):
            raise ValueError("each loss mask must have one entry per completion token")
        if not any(mask):
            raise ValueError("a completion without model tokens cannot be preferred or dispreferred")
    return {
        "prompt_ids": list(prompt_ids),
        "chosen_ids": list(chosen[0]),
        "chosen_mask": list(chosen[1]),
        "rejected_ids": list(rejected[0]),
        "rejected_mask": list(rejected[1]),
    }


@dataclass(frozen=True)
class DPORunConfig:
    max_steps: int = 20
    learning_rate: float = 2e-7  # GraphDancer's stage 2 (docs/methods.md, "Training")
    beta: float = 0.1
    batch_size: int = 4
    warmup_ratio: float = 0.05
    seed: int = 0
    threads: int | None = None
    precision: str = "auto"  # components/llm/precision.py: bfloat16 autocast where native
    ordered: bool = False  # True: pairs are taken in the given order (a precomputed curriculum)


def _collator(pad_token_id: int) -> Any:
    from trl.trainer.dpo_trainer import DataCollatorForPreference

    class MaskedPreferenceCollator(DataCollatorForPreference):
        """TRL's preference collator with the completion mask taken from the loss masks."""

        def torch_call(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
            out = super().torch_call(
                [{k: e[k] for k in ("prompt_ids", "chosen_ids", "rejected_ids")} for e in examples]
            )
            import torch

            rows = [[0] * len(e["prompt_ids"]) + list(e["chosen_mask"]) for e in examples]
            rows += [[0] * len(e["prompt_ids"]) + list(e["rejected_mask"]) for e in examples]
            mask = torch.zeros_like(out["completion_mask"])
            for i, r in enumerate(rows):
                r = r[: mask.shape[1]]
                mask[i, : len(r)] = torch.tensor(r, dtype=mask.dtype)
            out["completion_mask"] = mask * out["completion_mask"]
            return out

    return MaskedPreferenceCollator(pad_token_id=pad_token_id)


def run_dpo(
    model_dir: str | Path,
    pairs: Sequence[dict[str, list[int]]],
    output_dir: str | Path,
    config: DPORunConfig = DPORunConfig(),
) -> TrainResult:
    """Train with DPO on pre-tokenised, masked pairs (:func:`preference_example`)."""
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    from components.training._common import common_args, load, per_process, train_and_save

    if not pairs:
        raise ValueError("no preference pairs")

    class MaskedDPOTrainer(DPOTrainer):
        def _prepare_dataset(self, dataset: Any, processing_class: Any, args: Any, dataset_name: str) -> Any:
            return dataset  # already tokenised, masks included

        def _set_signature_columns_if_needed(self) -> None:
            if self._signature_columns is None:
                self._signature_columns = ["prompt_ids", "chosen_ids", "rejected_ids", "chosen_mask", "rejected_mask"]

    model, tokenizer = load(model_dir, config.threads)
    ref = copy.deepcopy(model).eval()
    args = DPOConfig(
        max_steps=config.max_steps,
        learning_rate=config.learning_rate,
        beta=config.beta,
        per_device_train_batch_size=per_process(config.batch_size),  # the same global batch on N processes
        lr_scheduler_type="linear",
        warmup_steps=max(0, round(config.warmup_ratio * config.max_steps)),
        train_sampling_strategy="sequential" if config.ordered else "random",
        **common_args(output_dir, config.seed, config.precision),
    )
    trainer = MaskedDPOTrainer(
        model=model,
        ref_model=ref,
        args=args,
        train_dataset=Dataset.from_list([dict(p) for p in pairs]),
        processing_class=tokenizer,
        data_collator=_collator(tokenizer.pad_token_id),
    )
    log = train_and_save(trainer, tokenizer, output_dir)
    return TrainResult(
        str(output_dir),
        int(trainer.state.global_step),
        [float(h["loss"]) for h in log if "loss" in h],
        [float(h["rewards/margins"]) for h in log if "rewards/margins" in h],
        log,
        asdict(config),
    )
