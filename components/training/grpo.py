"""GRPO with TRL 1.16 — single-turn, or multi-turn over any tool environment.

:func:`run_grpo` trains a local model folder with ``GRPOTrainer`` on a dataset of rows with a
``prompt`` column (plus whatever columns the reward functions read), and saves the result with
its per-step loss and mean reward.

**Multi-turn** (:class:`MultiTurn`): TRL's ``rollout_func`` hook hands the prompts of a step to
our :class:`~components.rollout.runner.RolloutRunner`, which plays each episode against a fresh
environment with the *policy being trained* (wrapped as a token-level backend) and returns
``prompt_ids``, ``completion_ids`` (model and environment tokens interleaved) and the loss mask
as ``env_mask`` — TRL folds it into the completion mask, so environment-inserted tokens never
carry policy-gradient or KL terms. The rollout's trajectory statistics are forwarded to the
reward functions as columns (``valid_format``, ``rounds``, ``invalid_calls``, ``halted``,
``evidence_hit``, ``level``) and the marked queries as ``pred_evidence`` — the ``graphdancer``
reward reads ``valid_format`` from there, the ``graphcert`` reward ``pred_evidence`` (its gold
side is the dataset's ``evidence_json`` / ``evidence_queries`` column).
TRL's ``rollout_func`` is experimental in 1.16 (hence the exact pin). With a
:class:`Validation` set, the run also records the mean reward and the answers' EM on held-out
questions before training and every few steps (the validation curve: what tells whether the
policy improved) and, by default, **keeps the best point**: the weights of the best-scoring
evaluation (EM, then reward; a later point must be strictly better) are restored before the model
is saved, and :attr:`TrainResult.chosen_step` says which step that was — 0 means the stage did not
improve on its start, and the saved weights are the start's.

**Advantages** (``scale_rewards``, TRL's option): ``group`` divides each group's centred rewards
by the group's standard deviation (TRL's default: a group of wrong answers whose rewards differ
only by the evidence term's 0.01–0.03 gets full-size advantages), ``batch`` by the whole batch's,
``none`` leaves them centred but unscaled (differences of 0.02 stay small).

**Scored spans** (:func:`span_trainer`): in the training pass, log-probabilities and entropies
are computed only at the model's own completion tokens — environment tokens are attended to as
context but never projected through the LM head (TRL would score every completion position on
CPU and mask afterwards). The loss is the same; the masked-loss tests compare both.

CPU settings as verified on these machines: ``use_cpu``, no bf16, no activation checkpointing,
no reporting; ``batch_size`` counts completions and must be divisible by ``num_generations``.

**Several processes** (``accelerate launch`` / ``torchrun``; docs/scale.md): ``batch_size`` stays
the global batch (each process generates and trains its share, TRL gathers the rewards so groups
are normalised whole), each process plays its episodes with the seeds they have in a
one-process run (``RolloutRunner.run(first=…)``), so the loss curve is the one-process run's; the
rollout statistics are gathered from every process; the validation curve is computed by every
process (the same points: the weights are the same); only the main process writes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from components.rollout.runner import RolloutConfig, RolloutRunner
from components.tools.env import ToolEnvironment
from components.training.selection import answers_correct, play, rollout_columns, score, summarize

__all__ = [
    "ADVANTAGE_SCALES",
    "BestPoint",
    "drop_cache",
    "GRPORunConfig",
    "MultiTurn",
    "TrainResult",
    "Validation",
    "grpo_args",
    "policy_backend",
    "restore_weights",
    "rollout_summary",
    "run_grpo",
    "span_logps",
    "span_trainer",
    "validation_point",
]


#: how GRPO scales the centred rewards into advantages (TRL's ``scale_rewards``)
ADVANTAGE_SCALES = ("group", "batch", "none")


def grpo_args(config: GRPORunConfig, output_dir: str | Path) -> Any:
    """TRL's ``GRPOConfig`` for ``config`` (vLLM colocated or served when ``use_vllm``)."""
    from trl import GRPOConfig

    from components.training._common import common_args, per_process

    vllm: dict[str, Any] = {}
    if config.use_vllm:
        vllm = {"vllm_mode": config.vllm_mode}
        if config.vllm_mode == "server":
            vllm["vllm_server_base_url"] = config.vllm_server_url
    micro = config.micro_batch_size
    share = per_process(config.batch_size)  # this process's completions per step
    if share % micro:
        raise ValueError(f"micro_batch {micro} does not divide this process's {share} completions")
    return GRPOConfig(
        max_steps=config.max_steps,
        learning_rate=config.learning_rate,
        # one generation of batch_size completions per optimizer step, its loss accumulated
        # over micro-batches: activation memory scales with the micro-batch, not the batch
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=share // micro,
        num_generations=config.num_generations,
        max_completion_length=config.max_completion_length,
        temperature=config.temperature,
        beta=config.beta,
        epsilon=config.epsilon,
        scale_rewards=config.scale_rewards,
        shuffle_dataset=config.shuffle,
        use_vllm=config.use_vllm,
        **vllm,
        **common_args(output_dir, config.seed, config.precision)
        | (
            {"save_strategy": "steps", "save_steps": config.save_every, "save_total_limit": 1}
            if config.save_every
            else {}
        ),
    )


def policy_backend(trainer: Any) -> Any:
    """The token-level backend that samples from the policy being trained: TRL's colocated vLLM
    engine when the run uses vLLM (TRL syncs the policy's weights into it before each rollout),
    else the policy through transformers — in bf16 mixed-precision runs through a bfloat16 copy
    of the policy whose weights are synced from it at every call (:class:`BF16Sampler`: on CPU,
    bf16 decoding measured 1.5× faster than float32, and autocast over the float32 weights
    slower than float32)."""
    vllm_generation = getattr(trainer, "vllm_generation", None)
    engine = getattr(vllm_generation, "llm", None) if getattr(trainer, "use_vllm", False) else None
    if engine is not None:
        from components.llm.vllm_backend import VLLMBackend

        return VLLMBackend.wrap(engine, trainer.processing_class)
    from components.llm.transformers_backend import TransformersBackend

    model = trainer.accelerator.unwrap_model(trainer.model)
    if not getattr(trainer.args, "bf16", False):
        return TransformersBackend.wrap(model, trainer.processing_class)
    sampler = getattr(trainer, "_graphdojo_sampler", None)
    if sampler is None or sampler.policy is not model:
        sampler = BF16Sampler(model, trainer.processing_class)
        trainer._graphdojo_sampler = sampler
    return sampler.synced()


class BF16Sampler:
    """A bfloat16 copy of a float32 policy for sampling, with one backend (and so one prefix
    cache) across calls; :meth:`synced` copies the policy's current weights in when they changed
    (an optimizer step), which also clears the cache (the engine sees new weight versions)."""

    def __init__(self, policy: Any, tokenizer: Any) -> None:
        import copy

        import torch

        from components.llm.transformers_backend import TransformersBackend

        self.policy = policy
        self.model = copy.deepcopy(policy).to(torch.bfloat16).eval().requires_grad_(False)
        self.backend = TransformersBackend.wrap(self.model, tokenizer)
        self._version = self._policy_version()

    def _policy_version(self) -> tuple[int, ...]:
        return tuple(p._version for p in self.policy.parameters())

    def synced(self) -> Any:
        import torch

        version = self._policy_version()
        if version != self._version:
            with torch.no_grad():
                for mine, theirs in zip(self.model.parameters(), self.policy.parameters(), strict=True):
                    mine.copy_(theirs)
            self._version = version
        return self.backend


def drop_cache(backend: Any) -> None:
    """Forget the keys and values ``backend``'s generation engine cached (none: nothing to do).
    Called when a training step's rollouts or a validation point are done: the next call samples
    from weights an optimizer step has moved, which makes every cached entry stale (the engine
    would drop them then), and until then they would sit beside the training pass — up to the
    engine's 4 GB after a validation point."""
    cache = getattr(getattr(backend, "engine", None), "cache", None)
    if cache is not None:
        cache.clear()


def rollout_summary(stats: Sequence[Any]) -> dict[str, float]:
    """One generation step's rates over its trajectories: tool-call rate (≥ 1 valid call), valid
    calls per trajectory, valid format, answered, loop-limit halts, mean rounds, and the mean
    model / environment tokens per trajectory."""
    n = max(1, len(stats))
    return {
        "model_tokens": sum(s.model_tokens for s in stats) / n,
        "env_tokens": sum(s.env_tokens for s in stats) / n,
        "tool_call_rate": sum(s.valid_calls > 0 for s in stats) / n,
        "valid_calls": sum(s.valid_calls for s in stats) / n,
        "valid_format": sum(bool(s.valid_format) for s in stats) / n,
        "answered": sum(bool(s.answered) for s in stats) / n,
        "halted": sum(bool(s.halted) for s in stats) / n,
        "rounds": sum(s.rounds for s in stats) / n,
    }


@dataclass(frozen=True)
class GRPORunConfig:
    max_steps: int = 20
    learning_rate: float = 1e-6
    batch_size: int = 8  # completions per step
    #: completions per forward/backward pass (the step's loss is accumulated over
    #: ``batch_size / micro_batch`` of them): 8 multi-turn completions of SmolLM2 in one pass
    #: did not fit in 24 GiB (the OOM killer stopped the cpu-learn run), 2 at a time do
    micro_batch: int = 2
    num_generations: int = 4
    max_completion_length: int = 64
    temperature: float = 1.0
    beta: float = 1e-4  # KL coefficient (GraphCert's initial 1e-4; docs/methods.md, "Training")
    epsilon: float = 0.2  # clip
    scale_rewards: str = "group"  # advantages: group / batch / none (see the module docstring)
    save_every: int = 0  # steps between resumable checkpoints in run_grpo's work_dir (0: none)
    seed: int = 0
    threads: int | None = None
    precision: str = "auto"  # components/llm/precision.py: bfloat16 autocast where native
    shuffle: bool = True  # False: prompts are taken in dataset order (a precomputed curriculum)
    use_vllm: bool = False  # generate with vLLM (GPU; the gpu preset)
    vllm_mode: str = "colocate"  # an engine inside the training process, or "server" (trl vllm-serve)
    vllm_server_url: str | None = None  # server mode: http://host:port

    def __post_init__(self) -> None:
        if self.batch_size % self.num_generations:
            raise ValueError("batch_size (completions) must be divisible by num_generations")
        if self.micro_batch < 1 or self.batch_size % self.micro_batch_size:
            raise ValueError("micro_batch must be >= 1 and divide batch_size (or exceed it: one pass)")
        if self.num_generations < 2:
            raise ValueError("GRPO needs at least 2 generations per prompt (group-normalised advantages)")
        if self.save_every < 0:
            raise ValueError(f"save_every must be >= 0, got {self.save_every}")
        if self.scale_rewards not in ADVANTAGE_SCALES:
            raise ValueError(f"scale_rewards must be one of {ADVANTAGE_SCALES}, got {self.scale_rewards!r}")

    @property
    def micro_batch_size(self) -> int:
        """Completions per pass: ``micro_batch``, at most the whole batch."""
        return min(self.micro_batch, self.batch_size)


@dataclass
class TrainResult:
    output_dir: str
    steps: int = 0
    losses: list[float] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    rollouts: list[dict[str, float]] = field(default_factory=list)  # per generation step (multi-turn)
    validation: list[dict[str, Any]] = field(default_factory=list)  # the validation curve (multi-turn)
    #: the step whose weights were saved: the best validation point (0: the start was best), or
    #: the last step without a validation set (or with ``keep_best`` off)
    chosen_step: int | None = None
    resumed_from: int | None = None  # the step an interrupted run was resumed from (None: ran from the start)


@dataclass(frozen=True)
class Validation:
    """A fixed set of held-out rows (``prompt``, ``answer``, ``answer_type`` and the reward's
    columns) played ``samples`` times each with the same seed before training and every ``every``
    steps (and after the last): the validation curve (reward and EM). Rewarded by the run's first
    reward function. ``keep_best``: the best point's weights are the ones saved, ranked by
    ``metric`` (``em`` or ``reward``) then the other; a later point must be strictly better."""

    rows: Sequence[dict[str, Any]]
    every: int = 2
    samples: int = 1
    rollout: RolloutConfig | None = None  # default: the training rollouts' config
    keep_best: bool = True
    metric: str = "em"

    def __post_init__(self) -> None:
        if self.metric not in ("em", "reward"):
            raise ValueError(f"validation metric must be em or reward, got {self.metric!r}")

    def rank(self, point: Mapping[str, Any]) -> tuple[float, float]:
        """The order in which points compete for "best" (higher is better)."""
        other = "reward" if self.metric == "em" else "em"
        return float(point.get(self.metric) or 0.0), float(point.get(other) or 0.0)


@dataclass(frozen=True)
class MultiTurn:
    """Multi-turn rollouts for :func:`run_grpo`: ``make_env`` builds one environment per episode;
    the prompt text is the episode's ``question``."""

    make_env: Callable[[], ToolEnvironment]
    rollout: RolloutConfig = RolloutConfig(max_turns=4, max_new_tokens=48)
    history: list[dict[str, float]] = field(default_factory=list, compare=False)
    validation: Validation | None = None

    def validation_callback(self, reward: Callable[..., Any]) -> Any:
        """A ``TrainerCallback`` that records the validation curve in ``.points`` and, with
        ``keep_best``, restores the best point's weights when training ends (``.chosen_step``);
        needs ``.trainer`` set before training starts."""
        from transformers import TrainerCallback

        spec, make_env = self.validation, self.make_env
        if spec is None or not spec.rows:
            return None
        rollout = spec.rollout or self.rollout

        class ValidationCurve(TrainerCallback):
            trainer: Any = None

            def __init__(self) -> None:
                self.points: list[dict[str, Any]] = []
                self.best = BestPoint(spec)

            @property
            def chosen_step(self) -> int | None:
                return self.best.chosen_step

            def _evaluate(self, step: int) -> None:
                model = self.trainer.model
                was_training = model.training
                model.eval()
                try:
                    point = validation_point(policy_backend(self.trainer), spec, make_env, rollout, reward, step)
                finally:
                    model.train(was_training)
                self.points.append(point)
                self.best.offer(point, {"": model})

            def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                self.best.spill = self.best.spill or Path(args.output_dir)
                if not self.points:  # a resumed run brings its points back (_resume)
                    self._evaluate(0)

            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                step = int(state.global_step)
                if step % max(1, spec.every) == 0 or step >= int(state.max_steps):
                    self._evaluate(step)

            def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                self.best.finish(int(state.global_step), {"": self.trainer.model})

        return ValidationCurve()

    def rollout_func(self) -> Callable[[Sequence[Any], Any], dict[str, Any]]:
        """TRL 1.16 hands ``rollout_func`` each prompt already repeated ``num_generations`` times
        (one entry per completion, as its reward columns are; verified here, whatever its
        docstring says), so one episode is played per entry."""

        def rollout(prompts: Sequence[Any], trainer: Any) -> dict[str, Any]:
            backend = policy_backend(trainer)
            rows = [{"question": p if isinstance(p, str) else str(p[-1]["content"])} for p in prompts]
            step = len(self.history)  # a fresh, reproducible sampling stream per generation step
            config = (
                self.rollout
                if self.rollout.seed is None
                else replace(self.rollout, seed=self.rollout.seed + 7919 * step)
            )
            # this process's episodes are the global batch's [rank × len, (rank + 1) × len)
            first = trainer.accelerator.process_index * len(rows)
            records = RolloutRunner(backend, self.make_env, config).run(rows, n=1, first=first)
            drop_cache(backend)
            stats = [r.stats for r in records]
            if trainer.accelerator.num_processes > 1:  # the step's rates over the global batch
                from accelerate.utils import gather_object

                stats = gather_object(stats)
            self.history.append(rollout_summary(stats))
            return {
                "prompt_ids": [r.prompt_ids for r in records],
                "completion_ids": [r.completion_ids for r in records],
                "logprobs": None,
                "env_mask": [r.loss_mask for r in records],
                **rollout_columns(records),
            }

        return rollout


def validation_point(
    backend: Any,
    spec: Validation,
    make_env: Callable[[], ToolEnvironment],
    rollout: RolloutConfig,
    reward: Callable[..., Any],
    step: int,
) -> dict[str, Any]:
    """One point of the validation curve: ``spec.rows`` played ``spec.samples`` times by
    ``backend`` — reward, EM and EM on non-boolean rows (with standard errors), the reward's answer
    and evidence terms, tool-call and valid-format rates
    (:func:`~components.training.selection.summarize`); ``correct``: each episode's EM (0/1) and
    ``answer_types`` its row's answer type, in row × sample order."""
    records = play(backend, spec.rows, make_env, rollout, spec.samples)
    drop_cache(backend)
    rows = [row for row in spec.rows for _ in range(spec.samples)]
    # every episode's correctness, in row × sample order (the same at every point): what pairs two
    # points question by question (:func:`~components.training.selection.paired_points`)
    correct = [int(c) for c in answers_correct(records, rows)]
    types = [str(row.get("answer_type") or "") for row in rows]
    point = summarize(records, score(reward, records, rows), rows)
    return {"step": step, **point, "samples": spec.samples, "correct": correct, "answer_types": types}


def _named(modules: Mapping[str, Any]) -> dict[str, Any]:
    return {f"{prefix}/{n}": p for prefix, m in modules.items() for n, p in m.named_parameters() if p.requires_grad}


class BestPoint:
    """Keeps the weights of the best validation point seen (``Validation.rank``; a later point
    must be strictly better) when ``spec.keep_best``; :meth:`finish` restores them into the
    modules (when the best is not the last point) and sets :attr:`chosen_step`.

    ``spill``: a folder where the kept weights are written and then mapped from the file instead
    of held as a copy in memory (a full-weight copy of the 0.5B Solver is 2 GB of the 24 a CPU
    machine has; mapped, its pages are the page cache's, which the kernel can drop); the file
    (:attr:`spill_file`, one per process: several processes of one run may share the folder) is
    removed by :meth:`finish`."""

    def __init__(self, spec: Validation, spill: Path | None = None) -> None:
        self.spec = spec
        self.spill = spill
        self.chosen_step: int | None = None
        self._best: tuple[tuple[float, float], int, dict[str, Any]] | None = None
        self._saved: tuple[Path, int] | None = None  # where and which step :meth:`save` last wrote

    def offer(self, point: Mapping[str, Any], modules: Mapping[str, Any]) -> None:
        if self.spec.keep_best and (self._best is None or self.spec.rank(point) > self._best[0]):
            if self.spill is None:
                weights = {n: p.detach().clone() for n, p in _named(modules).items()}
            else:
                weights = self._spilled({n: p.detach() for n, p in _named(modules).items()})
            self._best = (self.spec.rank(point), int(point["step"]), weights)

    @property
    def spill_file(self) -> Path | None:
        return None if self.spill is None else self.spill / f".best-point-{os.getpid()}.pt"

    def _spilled(self, weights: dict[str, Any]) -> dict[str, Any]:
        """``weights`` written to the spill file (atomically) and mapped back from it."""
        import torch

        path = self.spill_file
        assert path is not None
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        torch.save(weights, tmp)
        tmp.replace(path)  # an earlier point's mapping keeps its own (unlinked) file until dropped
        return dict(torch.load(path, mmap=True, weights_only=True))

    @property
    def step(self) -> int | None:
        """The best point's step so far (``None``: none kept yet)."""
        return None if self._best is None else self._best[1]

    def save(self, path: Path) -> None:
        """The kept point (rank, step, weights) to ``path`` (atomically); nothing kept: no file.
        A point already written there is not written again."""
        import torch

        if self._best is not None and self._saved != (path, self._best[1]):
            tmp = path.with_name(path.name + ".tmp")
            torch.save({"rank": list(self._best[0]), "step": self._best[1], "weights": self._best[2]}, tmp)
            tmp.replace(path)
            self._saved = (path, self._best[1])

    def load(self, path: Path, step: int | None) -> None:
        """Take back the point :meth:`save` wrote, if it is the one at ``step``."""
        import torch

        if step is None or not path.is_file():
            return
        saved = torch.load(path, mmap=True, weights_only=True)  # mapped, not copied (see ``spill``)
        if int(saved["step"]) == step:
            self._best = (tuple(saved["rank"]), step, dict(saved["weights"]))
            self._saved = (path, step)

    def finish(self, last_step: int, modules: Mapping[str, Any]) -> int:
        if self._best is None:
            self.chosen_step = last_step
        else:
            _rank, step, weights = self._best
            if step != last_step:
                restore_weights(modules, weights)
            self.chosen_step, self._best = step, None
        if self.spill_file is not None:
            self.spill_file.unlink(missing_ok=True)
        return self.chosen_step


def restore_weights(modules: Mapping[str, Any], weights: Mapping[str, Any]) -> None:
    """Copy saved parameter tensors (keyed ``"<module key>/<parameter name>"``) back into
    ``modules`` in place; every name must exist."""
    import torch

    params = _named(modules)
    missing = set(weights) - set(params)
    if missing:
        raise ValueError(f"saved weights name parameters the model lacks: {sorted(missing)[:3]}")
    with torch.no_grad():
        for name, value in weights.items():
            params[name].copy_(value)


#: what a resumable run keeps beside TRL's checkpoint: the rollout history, the validation curve
#: and the kept point's step (in the checkpoint folder), and the kept point's weights (in the work folder)
RUN_STATE_FILE = "graphdojo_state.json"
BEST_POINT_FILE = "best_point.pt"


def _run_state_callback(work_dir: Path, history: list[dict[str, float]] | None, curve: Any) -> Any:
    """A ``TrainerCallback`` that writes :data:`RUN_STATE_FILE` into each checkpoint TRL saves
    (and the kept point's weights into ``work_dir``), so :func:`_resume` can continue the run; no
    checkpoint is written at the last step (the run is over)."""
    import json

    from transformers import TrainerCallback

    class RunState(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if state.global_step >= state.max_steps:  # the run is over: nothing left to resume
                control.should_save = False
            return control

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if not state.is_world_process_zero:  # every process holds the same state; one writes it
                return
            if curve is not None:
                curve.best.save(work_dir / BEST_POINT_FILE)
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            payload = {
                "step": int(state.global_step),
                "history": list(history or []),
                "points": [] if curve is None else list(curve.points),
                "best_step": None if curve is None else curve.best.step,
            }
            tmp = folder / (RUN_STATE_FILE + ".tmp")
            tmp.write_text(json.dumps(payload))
            tmp.replace(folder / RUN_STATE_FILE)

    return RunState()


def _resume(work_dir: Path, history: list[dict[str, float]] | None, curve: Any) -> tuple[str, int] | None:
    """The last complete checkpoint in ``work_dir`` (TRL's, with :data:`RUN_STATE_FILE`) and its
    step, its rollout history and validation curve put back; ``None``: nothing to resume (a run
    killed between TRL's save and the state file starts again)."""
    import json

    from transformers.trainer_utils import get_last_checkpoint

    last = get_last_checkpoint(str(work_dir)) if work_dir.is_dir() else None
    if last is None or not (Path(last) / RUN_STATE_FILE).is_file():
        return None
    state = json.loads((Path(last) / RUN_STATE_FILE).read_text())
    if history is not None:
        history[:] = state["history"]
    if curve is not None:
        curve.points[:] = state["points"]
        curve.best.load(work_dir / BEST_POINT_FILE, state["best_step"])
    return last, int(state["step"])


def span_logps(
    model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int, scored: Any, temperature: float = 1.0
) -> tuple[Any, Any]:
    """Per-token log-probabilities and entropies of the last ``logits_to_keep`` tokens, computed
    only where ``scored`` (``[batch, logits_to_keep]``) is 1; 0 elsewhere. The backbone sees the
    whole sequence; only scored positions go through the LM head (TRL's chunked kernel)."""
    from trl.kernels import ChunkedLogProbFunction

    backbone = getattr(model, model.base_model_prefix)
    hidden = backbone(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
    hidden = hidden[:, -logits_to_keep - 1 : -1]
    mask = scored.bool()
    head = model.get_output_embeddings()
    config = model.config.get_text_config()
    logps, entropy, *_ = ChunkedLogProbFunction.apply(
        hidden[mask],
        head.weight,
        head.bias,
        input_ids[:, -logits_to_keep:][mask],
        temperature,
        32768,
        getattr(config, "final_logit_softcapping", None),
        1.0,
        ("log_probs", "entropy"),
    )
    return logps.new_zeros(mask.shape).masked_scatter(mask, logps), entropy.new_zeros(mask.shape).masked_scatter(
        mask, entropy
    )


def span_trainer() -> type:
    """``GRPOTrainer`` whose training pass scores only the model's tokens (:func:`span_logps`)
    when the rollouts carry an environment mask; everything else is TRL's."""
    from trl import GRPOTrainer

    from components.training._common import is_wrapped

    class SpanGRPOTrainer(GRPOTrainer):
        _scored: Any = None

        def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
            tool = inputs.get("tool_mask")
            self._scored = None if tool is None else inputs["completion_mask"] * tool
            try:
                return super()._compute_loss(model, inputs)
            finally:
                self._scored = None

        def _get_per_token_logps_and_entropies(
            self,
            model: Any,
            input_ids: Any,
            attention_mask: Any,
            logits_to_keep: int,
            batch_size: int | None = None,
            compute_entropy: bool = False,
            compute_aux_loss: bool = False,
            **kwargs: Any,
        ) -> Any:
            extra = any(v is not None for v in kwargs.values())  # images: TRL's own path
            if (
                self._scored is None
                or is_wrapped(model)  # data-parallel: the forward must go through the wrapper
                or compute_aux_loss
                or extra
                or self._scored.shape != (len(input_ids), logits_to_keep)
            ):
                return super()._get_per_token_logps_and_entropies(
                    model,
                    input_ids,
                    attention_mask,
                    logits_to_keep,
                    batch_size,
                    compute_entropy,
                    compute_aux_loss,
                    **kwargs,
                )
            logps, entropy = span_logps(
                model, input_ids, attention_mask, logits_to_keep, self._scored, self.temperature
            )
            return logps, (entropy if compute_entropy else None), None

    return SpanGRPOTrainer


def run_grpo(
    model_dir: str | Path,
    rows: Sequence[dict[str, Any]],
    reward_funcs: Sequence[Callable[..., Any]],
    output_dir: str | Path,
    config: GRPORunConfig = GRPORunConfig(),
    multi_turn: MultiTurn | None = None,
    work_dir: str | Path | None = None,
) -> TrainResult:
    """Train with GRPO; see the module docstring. With ``config.save_every``, a resumable
    checkpoint (TRL's: weights, optimizer, scheduler, RNG and step; ours: the rollout history, the
    validation curve and the kept point) is written to ``work_dir`` every that many steps — the
    last one only — and a run that finds one there continues from it with the same data order."""
    from datasets import Dataset

    from components.training._common import load, train_and_save

    if not rows or any("prompt" not in r for r in rows):
        raise ValueError("every row needs a 'prompt'")
    if config.save_every and work_dir is None:
        raise ValueError("save_every needs a work_dir (where the resumable checkpoints go)")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    model, tokenizer = load(model_dir, config.threads, left_pad=True)
    args = grpo_args(config, work_dir if config.save_every else output_dir)
    curve = None if multi_turn is None else multi_turn.validation_callback(reward_funcs[0])
    history = None if multi_turn is None else multi_turn.history
    callbacks = [] if curve is None else [curve]
    resume = None
    if config.save_every:
        callbacks.append(_run_state_callback(Path(work_dir), history, curve))  # type: ignore[arg-type]
        resume = _resume(Path(work_dir), history, curve)  # type: ignore[arg-type]
    trainer = span_trainer()(
        model=model,
        reward_funcs=list(reward_funcs),
        args=args,
        train_dataset=Dataset.from_list([dict(r) for r in rows]),
        processing_class=tokenizer,
        rollout_func=None if multi_turn is None else multi_turn.rollout_func(),
        callbacks=callbacks or None,
    )
    if curve is not None:
        curve.trainer = trainer
    latest = None if multi_turn is None else (lambda: multi_turn.history[-1] if multi_turn.history else {})
    log = train_and_save(trainer, tokenizer, output_dir, latest, resume_from=None if resume is None else resume[0])
    return TrainResult(
        str(output_dir),
        int(trainer.state.global_step),
        [float(h["loss"]) for h in log if "loss" in h],
        [float(h["reward"]) for h in log if "reward" in h],
        log,
        asdict(config) | ({} if multi_turn is None else {"rollout": asdict(multi_turn.rollout)}),
        [] if multi_turn is None else list(multi_turn.history),
        [] if curve is None else list(curve.points),
        int(trainer.state.global_step) if curve is None else curve.chosen_step,
        None if resume is None else resume[1],
    )
