"""What every trainer here shares: CPU-safe TRL arguments, model loading, quiet logging, and
what a trainer launched as several processes needs to know (``accelerate launch`` / ``torchrun``
set ``WORLD_SIZE`` and ``RANK``; docs/scale.md)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def load(
    model_dir: str | Path, threads: int | None, *, left_pad: bool = False, frozen_precision: str | None = None
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from a local folder, offline; a pad token is always set. The
    weights are loaded in **float32** whatever dtype the folder was saved in — the trainable
    master copy: transformers 5 loads a checkpoint in its saved dtype (Qwen2.5's: bfloat16), and
    Adam updates of a bfloat16 weight smaller than its rounding step (2⁻⁸ of its size: an RL step
    at lr 1e-6 on a weight of 0.02) are lost; bfloat16 *compute* is autocast's
    (:func:`common_args`), and on a CPU without native bfloat16 (AVX2 only) bfloat16 weights
    multiply ≈ 70× slower than float32. ``frozen_precision``: the weights will be frozen (LoRA
    trains float32 adapters beside them), so a folder saved in bfloat16 stays bfloat16 where that
    precision resolves to it (:func:`~components.llm.precision.resolve_precision`: the hardware
    has it); a float32 folder is never rounded down."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from components.llm.precision import resolve_precision

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if threads:
        torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if left_pad:
        tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    dtype = torch.float32
    if frozen_precision is not None and resolve_precision(frozen_precision) == "bfloat16":
        saved = getattr(AutoConfig.from_pretrained(model_dir), "dtype", None)
        dtype = torch.bfloat16 if str(saved).removeprefix("torch.") == "bfloat16" else torch.float32
    return AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype), tokenizer


def per_process(global_batch: int, what: str = "batch_size") -> int:
    """This process's share of a batch of ``global_batch`` examples, so a run launched on N
    processes trains with the same global batch (and learning-rate meaning) as one process."""
    from components.store.ranks import world_size

    n = world_size()
    if global_batch % n:
        raise ValueError(f"{what} {global_batch} does not split over {n} processes; make it a multiple of {n}")
    return global_batch // n


def is_wrapped(model: Any) -> bool:
    """Whether ``model`` is wrapped for data-parallel training (``DistributedDataParallel``,
    DeepSpeed's engine: a wrapper holding the model as ``.module``): its forward must then be
    called through the wrapper, which synchronises (or gathers) what the processes share."""
    import torch

    return isinstance(getattr(model, "module", None), torch.nn.Module)


def work_folder(ctx: Any, layer: str) -> Path:
    """Where a long stage keeps what lets an interrupted build resume —
    ``<data>/work/<layer>/<domain>/<fingerprint>/`` — until the stage lands (then it is removed)."""
    return Path(ctx.data_root) / "work" / layer / ctx.domain / str(ctx.fingerprint or "unversioned")


def common_args(output_dir: str | Path, seed: int, precision: str = "auto") -> dict[str, Any]:
    """TRL 1.16 arguments verified on these machines (CPU: no activation checkpointing), logging
    every step, no checkpoints written mid-run, no reporting services. ``precision`` (``auto``:
    components/llm/precision.py) resolved to ``bfloat16`` trains with bfloat16 autocast over
    float32 master weights (mixed precision, on CPU too)."""
    import torch

    from components.llm.precision import resolve_precision

    device = "cuda" if torch.cuda.is_available() else "cpu"
    return {
        "output_dir": str(output_dir),
        "seed": seed,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "use_cpu": not torch.cuda.is_available(),
        "bf16": resolve_precision(precision, device) == "bfloat16",
        "activation_checkpointing": False,
        "disable_tqdm": True,
        "ddp_find_unused_parameters": False,  # several processes: every trained parameter is used
    }


#: what a progress line shows of a trainer's per-step log, when the trainer logs it
PROGRESS_KEYS = {
    "loss": "loss",
    "reward": "reward",
    "kl": "kl",
    "frac_reward_zero_std": "zero-std groups",
    "rewards/margins": "margin",
}


def progress_callback(label: str, extra: Callable[[], Mapping[str, float]] | None = None) -> Any:
    """A ``TrainerCallback`` writing one line per optimizer step to stderr — ``[grpo] step 3/24:
    loss 0.012, reward 0.41, kl 0.0003, zero-std groups 0.5 (412 s)`` — so a long training run
    shows its progress (in the terminal, and in the Dagster UI's captured stderr of the step);
    stdout stays free for the CLI's JSON lines. ``extra()`` adds the latest rollouts' rates
    (multi-turn GRPO: tool-call rate, valid format)."""
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        t0 = time.perf_counter()

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.t0 = time.perf_counter()

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            if not logs or "loss" not in logs or not state.is_world_process_zero:  # one line per step, not per process
                return
            shown = [
                f"{name} {logs[k]:.4g}" for k, name in PROGRESS_KEYS.items() if isinstance(logs.get(k), int | float)
            ]
            more = extra() if extra is not None else {}
            shown += [f"{k.replace('_', ' ')} {more[k]:.2f}" for k in ("tool_call_rate", "valid_format") if k in more]
            elapsed = time.perf_counter() - self.t0
            print(
                f"[{label}] step {state.global_step}/{state.max_steps}: {', '.join(shown)} ({elapsed:.0f} s)",
                file=sys.stderr,
                flush=True,
            )

    return Progress()


def train_and_save(
    trainer: Any,
    tokenizer: Any,
    output_dir: str | Path,
    extra: Callable[[], Mapping[str, float]] | None = None,
    *,
    merge: bool = False,
    resume_from: str | None = None,
) -> list[dict[str, Any]]:
    """Train without printing log dicts to stdout (the CLI's stdout is JSON lines; one progress
    line per step goes to stderr, :func:`progress_callback`), save the model and tokenizer, and
    return the log history. ``merge``: the model is a ``peft`` model whose adapters are merged
    into the saved weights, so the folder loads like any Hugging Face model. ``resume_from``: a
    checkpoint folder the trainer saved, continued from (its steps are not trained again). Launched
    as several processes, only the main one writes."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    name = type(trainer).__name__.lower()
    label = next((k for k in ("grpo", "dpo", "sft") if k in name), "train")
    trainer.add_callback(progress_callback(label, extra))
    trainer.train(resume_from_checkpoint=resume_from)
    if merge and trainer.is_world_process_zero():
        trainer.model.merge_and_unload().save_pretrained(str(output_dir))
    elif not merge:
        trainer.save_model(str(output_dir))  # the main process writes, the others wait for it
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(output_dir))
    return [dict(h) for h in trainer.state.log_history]
