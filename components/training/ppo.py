"""PPO with a critic on multi-turn rollouts (GraphDancer's stage 1), environment tokens masked.

TRL 1.16 ships no PPO trainer (nor does its ``experimental`` package); torchrl 0.14 (which installs
beside torch 2.13) has PPO and GAE loss modules, but they are built around TensorDict actor/critic
modules over environment steps, not a causal LM whose "actions" are the model's own tokens between
inserted environment tokens. So the PPO step is written here, on the rollout runner's records.

**The token MDP.** A rollout's completion interleaves model tokens (``loss_mask`` 1) and
environment tokens (0). Only model tokens are actions: advantages, returns, the policy loss, the
value loss and the KL term are all computed on the model tokens, in order, as if the environment
tokens between them were part of the state (they are: the policy and critic read them as context).
Rewards: the episode reward on the last model token, minus ``kl_coef · (log π − log π_ref)`` on
every model token (the usual per-token KL penalty to the frozen reference).

**GAE** (:func:`gae`) over the model tokens: ``δ_t = r_t + γ V_{t+1} − V_t``,
``A_t = δ_t + γλ A_{t+1}``, ``V`` after the last model token 0; returns ``A + V``. Advantages are
whitened over the batch's model tokens.

**Losses** (:func:`policy_loss`, :func:`value_loss`): the clipped surrogate
``−min(ρA, clip(ρ, 1 − ε, 1 + ε)A)`` with ``ρ = exp(log π − log π_old)``, and the clipped value loss
``½ max((V − R)², (V_old + clip(V − V_old, ±c) − R)²)``, both averaged over model tokens.

**The critic** is a scalar value head (:class:`ValueHead`) on the policy's last hidden state — one
backbone, two learning rates: the actor's parameters at ``actor_lr``, the value head at
``critic_lr`` (the value loss's gradient reaches the backbone at the actor's rate). It is saved as
``value_head.safetensors`` beside the Hugging Face weights and loaded back with them.

**Log-probabilities of the distribution sampled from** (:func:`sampling_logprobs`): the rollouts
are sampled at ``temperature`` from the ``top_k`` most likely tokens and, among those, the nucleus
of mass ``top_p`` (the generation engine's rule); the old, reference and new log-probabilities are
all taken over that same truncated, renormalised distribution — not over the full softmax, which
would give every sampled token a lower probability than the one it was drawn with and put the
lost mass into the importance ratio and the KL term.

**Critic warm-up** (``critic_warmup`` steps): the first steps train the value head alone (the
backbone's hidden states detached, no policy loss), so the policy moves only once the critic's
values are more than its zero initialisation — with λ = 1 over a few steps a zero critic makes
PPO REINFORCE with a batch-mean baseline.

**Best point kept**: with a :class:`~components.training.grpo.Validation` set, the policy plays
the held-out rows before training, every ``every`` steps and after the last; the best point's
policy and value head are the ones saved (``PPOResult.chosen_step``; 0: the start was best), as
GRPO does.

Hyper-parameters: SPEC §7's (KL 0.001, clip 0.2, value clip 0.5, actor lr 1e-6, critic lr 1e-5,
temperature 0.7 / top-p 0.8 / top-k 20) are :data:`REFERENCE`; CPU presets scale the batch and the
step count down.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import torch

if TYPE_CHECKING:
    from components.training.grpo import BF16Sampler, Validation

__all__ = [
    "REFERENCE",
    "PPOConfig",
    "PPOResult",
    "ValueHead",
    "gae",
    "load_value_head",
    "policy_loss",
    "run_ppo",
    "sampling_logprobs",
    "value_loss",
    "whiten",
]


@dataclass(frozen=True)
class PPOConfig:
    steps: int = 4
    episodes_per_step: int = 8  # rollouts per step (questions × samples_per_question)
    samples_per_question: int = 2
    ppo_epochs: int = 1  # passes over each step's rollouts
    micro_batch: int = 2  # rollouts per forward/backward (gradients accumulate over a minibatch)
    minibatch: int | None = None  # rollouts per optimizer step; None: the whole step (one update, as GRPO)
    actor_lr: float = 1e-6
    critic_lr: float = 1e-5
    kl_coef: float = 0.001
    clip: float = 0.2
    value_clip: float = 0.5
    value_coef: float = 0.5
    gamma: float = 1.0
    lam: float = 1.0  # verl's default for LLM PPO; 0.95 starved early tokens of credit in the toy test
    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int = 20
    max_turns: int = 2
    max_new_tokens: int = 64
    seed: int = 0
    threads: int | None = None
    precision: str = "auto"
    critic_warmup: int = 0  # first steps that train the value head alone (the policy does not move)
    save_every: int = 0  # steps between resumable states in run_ppo's work_dir (0: none)

    def __post_init__(self) -> None:
        if not 0 <= self.critic_warmup < max(self.steps, 1):
            raise ValueError(f"critic_warmup ({self.critic_warmup}) must be >= 0 and below steps ({self.steps})")
        if self.episodes_per_step % self.samples_per_question:
            raise ValueError("episodes_per_step must be a multiple of samples_per_question")
        if min(self.steps, self.episodes_per_step, self.ppo_epochs, self.micro_batch, self.minibatch or 1) < 1:
            raise ValueError("steps, episodes_per_step, ppo_epochs, micro_batch and minibatch must be >= 1")
        if self.save_every < 0:
            raise ValueError(f"save_every must be >= 0, got {self.save_every}")


#: GraphDancer's stage-1 reference hyper-parameters (SPEC §7), for the gpu preset
REFERENCE: Final = PPOConfig(
    steps=200, episodes_per_step=128, samples_per_question=1, actor_lr=1e-6, critic_lr=1e-5, kl_coef=0.001,
    clip=0.2, value_clip=0.5, temperature=0.7, top_p=0.8, top_k=20, max_turns=10, max_new_tokens=512,
)  # fmt: skip


# -- the math ---------------------------------------------------------------------------------------


def gae(
    rewards: torch.Tensor, values: torch.Tensor, gamma: float = 1.0, lam: float = 0.95
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(advantages, returns)`` of one episode's model tokens (1-D tensors in order; the value
    after the last token is 0)."""
    n = rewards.shape[0]
    adv = torch.zeros(n, dtype=torch.float32)
    last = 0.0
    for t in range(n - 1, -1, -1):
        nxt = float(values[t + 1]) if t + 1 < n else 0.0
        delta = float(rewards[t]) + gamma * nxt - float(values[t])
        last = delta + gamma * lam * last
        adv[t] = last
    return adv, adv + values.float()


def whiten(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Zero mean, unit variance (a single value stays as it is, minus its mean)."""
    if x.numel() < 2:
        return x - x.mean()
    return (x - x.mean()) / (x.std(unbiased=False) + eps)


def policy_loss(
    logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, clip: float = 0.2
) -> tuple[torch.Tensor, float]:
    """The clipped surrogate averaged over ``mask``'d positions, and the clipped fraction."""
    ratio = torch.exp(logp - old_logp)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1 - clip, 1 + clip) * advantages
    per_token = -torch.min(unclipped, clipped)
    denom = mask.sum().clamp(min=1)
    frac = float(((ratio - 1).abs() > clip).float().mul(mask).sum() / denom)
    return (per_token * mask).sum() / denom, frac


def value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor, clip: float = 0.5
) -> torch.Tensor:
    """``½ max((V − R)², (V_old + clip(V − V_old) − R)²)`` averaged over ``mask``'d positions."""
    clipped = old_values + torch.clamp(values - old_values, -clip, clip)
    per_token = 0.5 * torch.max((values - returns) ** 2, (clipped - returns) ** 2)
    return (per_token * mask).sum() / mask.sum().clamp(min=1)


def sampling_logprobs(
    logits: torch.Tensor,
    targets: torch.Tensor,
    temperature: float = 1.0,
    top_p: float = 1.0,
    top_k: int = 0,
    *,
    keep_targets: bool = True,
) -> torch.Tensor:
    """Log-probabilities of ``targets`` (``[n]``) under ``logits`` (``[n, vocab]``) as the engine
    samples (components/llm/engine.py): logits / ``temperature``, the ``top_k`` most likely tokens
    (0: all), then among them the nucleus — the most likely tokens until the mass *before* one
    exceeds ``top_p`` (shares taken after top-k) — renormalised over what is kept. Differentiable
    in ``logits``; the kept set is chosen without gradients. ``keep_targets``: a target outside the
    kept set (rounding between the sampler's and the scorer's precision) is kept, so its
    log-probability stays finite; else it is ``-inf``."""
    scores = logits.float() / max(temperature, 1e-6)
    if top_p >= 1.0 and top_k <= 0:
        return scores.log_softmax(-1).gather(-1, targets[:, None])[:, 0]
    with torch.no_grad():
        k = min(top_k, scores.shape[-1]) if top_k > 0 else scores.shape[-1]
        vals, idx = torch.topk(scores, k, dim=-1)  # sorted, descending
        probs = vals.softmax(-1)
        kept = probs.cumsum(-1) - probs <= top_p if top_p < 1.0 else torch.ones_like(probs, dtype=torch.bool)
        keep = torch.zeros_like(scores, dtype=torch.bool).scatter(-1, idx, kept)
        if keep_targets:
            keep.scatter_(-1, targets[:, None], True)
    return scores.masked_fill(~keep, float("-inf")).log_softmax(-1).gather(-1, targets[:, None])[:, 0]


# -- the critic -------------------------------------------------------------------------------------


class ValueHead(torch.nn.Module):
    """A scalar value per position from the policy's last hidden state."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(hidden, 1)
        torch.nn.init.zeros_(self.linear.weight)
        torch.nn.init.zeros_(self.linear.bias)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        with torch.autocast(hidden.device.type, enabled=False):  # values in float32, even under bf16 autocast
            return self.linear(hidden.float()).squeeze(-1)


VALUE_HEAD_FILE: Final = "value_head.safetensors"


def save_value_head(head: ValueHead, folder: str | Path) -> Path:
    from safetensors.torch import save_file

    path = Path(folder) / VALUE_HEAD_FILE
    save_file({k: v.contiguous() for k, v in head.state_dict().items()}, str(path))
    return path


def load_value_head(folder: str | Path, hidden: int) -> ValueHead:
    """The value head saved beside a checkpoint, or a fresh zero head when there is none."""
    from safetensors.torch import load_file

    head = ValueHead(hidden)
    path = Path(folder) / VALUE_HEAD_FILE
    if path.is_file():
        head.load_state_dict(load_file(str(path)))
    return head


# -- scoring a batch of rollouts ---------------------------------------------------------------------


def _forward(
    model: Any, head: ValueHead | None, rec: Any, config: PPOConfig, *, critic_only: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probabilities (of the distribution the tokens were sampled from:
    :func:`sampling_logprobs` at the config's temperature, top-p and top-k) and values at one
    rollout's model tokens, in order. ``critic_only``: the values' input is detached from the
    backbone (the critic warm-up trains the head alone)."""
    ids = torch.tensor([list(rec.prompt_ids) + list(rec.completion_ids)], dtype=torch.long)
    out = model(input_ids=ids, output_hidden_states=head is not None, use_cache=False)
    start = len(rec.prompt_ids) - 1
    positions = torch.tensor([start + i for i, m in enumerate(rec.loss_mask) if m], dtype=torch.long)
    targets = ids[0, positions + 1]
    logp = sampling_logprobs(out.logits[0, positions], targets, config.temperature, config.top_p, config.top_k)
    values = None
    if head is not None:
        hidden = out.hidden_states[-1][0, positions]
        values = head(hidden.detach() if critic_only else hidden)
    return logp, values


@dataclass
class PPOResult:
    output_dir: str
    steps: int = 0
    curves: list[dict[str, Any]] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0
    validation: list[dict[str, Any]] = field(default_factory=list)  # the validation curve (with a Validation)
    chosen_step: int | None = None  # the saved weights' step (the best validation point; else the last)
    resumed_from: int | None = None  # the step an interrupted run was resumed from (None: ran from the start)

    @property
    def rewards(self) -> list[float]:
        return [c["reward"] for c in self.curves]


#: the resumable state of a PPO run in its work folder (one file, replaced atomically)
STATE_FILE = "ppo_state.pt"


def _save_state(
    work: Path, step: int, modules: dict[str, Any], optimizer: Any, result: PPOResult, best_step: int | None
) -> None:
    """Everything a resumed run needs after ``step`` steps, written to a temporary file and moved
    over the previous state in one rename (a run killed while writing keeps the previous one)."""
    tmp = work / (STATE_FILE + ".tmp")
    torch.save(
        {
            "step": step,
            "policy": modules["policy"].state_dict(),
            "value_head": modules["value_head"].state_dict(),
            "optimizer": optimizer.state_dict(),
            "curves": result.curves,
            "validation": result.validation,
            "best_step": best_step,
        },
        tmp,
    )
    tmp.replace(work / STATE_FILE)


def _load_state(work: Path) -> dict[str, Any] | None:
    """The state :func:`_save_state` left in ``work``; ``None``: nothing to resume."""
    path = work / STATE_FILE
    return torch.load(path, weights_only=True) if path.is_file() else None


def run_ppo(
    model_dir: str | Path,
    rows: Sequence[dict[str, Any]],
    reward: Callable[..., Sequence[float | None]],
    make_env: Callable[[], Any],
    output_dir: str | Path,
    config: PPOConfig = PPOConfig(),
    *,
    stops: Sequence[str] = ("</graph>", "</answer>"),
    system_prompt: str | None = None,
    row_order: Sequence[int] | None = None,
    validation: Validation | None = None,
    work_dir: str | Path | None = None,
) -> PPOResult:
    """Train ``model_dir`` with PPO on multi-turn rollouts of ``rows`` (``question``, ``answer`` …)
    in ``make_env()`` episodes, rewarded by ``reward`` (a TRL-style reward function, as GRPO's);
    save the policy (Hugging Face folder) and its value head to ``output_dir``. ``row_order``
    fixes which rows each step plays (a curriculum order); default: the rows in turn.
    ``validation``: the validation curve and the best point kept (module docstring). With
    ``config.save_every``, the run's state (policy, value head, optimizer, curves, validation
    points, kept point) is written to ``work_dir`` every that many steps (the last one only; not
    at the last step), and a run that finds one there continues from it: each step's questions and
    sampling seeds follow from its index, so the resumed run plays what the whole run would."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from components.llm.precision import resolve_precision
    from components.llm.transformers_backend import TransformersBackend
    from components.rollout.runner import RolloutConfig, RolloutRunner
    from components.store.ranks import world_size
    from components.training.grpo import BEST_POINT_FILE, BestPoint, BF16Sampler, validation_point
    from components.training.selection import score

    if world_size() > 1:  # its own loop has no gradient synchronisation: N processes would train N copies
        raise ValueError(
            f"PPO (GraphDancer's stage 1) trains in one process; it was launched as {world_size()} "
            "(docs/scale.md: launch the PPO stage without accelerate, or use GRPO)"
        )
    if config.save_every and work_dir is None:
        raise ValueError("save_every needs a work_dir (where the resumable state goes)")
    t0 = time.perf_counter()
    if config.threads:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    # float32 master weights whatever the folder's dtype (components/training/_common.py, load)
    policy = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    reference = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval().requires_grad_(False)
    head = load_value_head(model_dir, policy.config.hidden_size)
    optimizer = torch.optim.AdamW(
        [{"params": policy.parameters(), "lr": config.actor_lr}, {"params": head.parameters(), "lr": config.critic_lr}]
    )
    bf16 = resolve_precision(config.precision) == "bfloat16"
    questions = config.episodes_per_step // config.samples_per_question
    order = list(row_order) if row_order is not None else list(range(len(rows)))
    if not order:
        raise ValueError("no rows to train on")
    result = PPOResult(str(output_dir), config=asdict(config))
    bf16_copy: BF16Sampler | None = None

    def sampler_now() -> Any:
        nonlocal bf16_copy
        policy.eval()
        if bf16:  # sample from a bfloat16 copy, synced after every optimizer step (as GRPO does)
            bf16_copy = bf16_copy or BF16Sampler(policy, tokenizer)
            return bf16_copy.synced()
        return TransformersBackend.wrap(policy, tokenizer)

    def rollout_at(seed: int) -> Any:
        return RolloutConfig(
            max_turns=config.max_turns,
            max_new_tokens=config.max_new_tokens,
            temperature=config.temperature,
            top_p=config.top_p,
            top_k=config.top_k,
            seed=seed,
            stops=tuple(stops),
            system_prompt=system_prompt,
        )

    best = BestPoint(validation, spill=Path(output_dir)) if validation is not None and validation.rows else None
    modules = {"policy": policy, "value_head": head}

    def validate(step: int) -> None:
        if best is None or validation is None:
            return
        spec_rollout = validation.rollout or rollout_at(config.seed)
        point = validation_point(sampler_now(), validation, make_env, spec_rollout, reward, step)
        result.validation.append(point)
        best.offer(point, modules)

    work = Path(work_dir) if work_dir is not None else None
    state = _load_state(work) if work is not None and config.save_every else None
    if state is None:
        validate(0)
        first = 0
    else:
        policy.load_state_dict(state["policy"])
        head.load_state_dict(state["value_head"])
        optimizer.load_state_dict(state["optimizer"])
        result.curves, result.validation = list(state["curves"]), list(state["validation"])
        if best is not None:
            best.load(work / BEST_POINT_FILE, state["best_step"])  # type: ignore[operator]
        first = result.steps = result.resumed_from = int(state["step"])
        print(f"[ppo] resuming at step {first}/{config.steps} from {work}", file=sys.stderr, flush=True)
    for step in range(first, config.steps):
        t_step = time.perf_counter()
        picked = [rows[order[(step * questions + i) % len(order)]] for i in range(questions)]
        sampler = sampler_now()
        rollout = rollout_at(config.seed + 7919 * step)
        warmup = step < config.critic_warmup
        tasks = [{k: v for k, v in r.items() if k in ("question", "answer", "answer_type")} for r in picked]
        records = RolloutRunner(sampler, make_env, rollout).run(tasks, n=config.samples_per_question)
        row_of = [picked[i // config.samples_per_question] for i in range(len(records))]
        episode_rewards = score(reward, records, row_of)
        usable = [i for i, r in enumerate(records) if sum(r.loss_mask)]
        # old log-probs, reference log-probs and values, without gradients
        batch = []
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            for i in usable:
                logp, values = _forward(policy, head, records[i], config)
                ref_logp, _ = _forward(reference, None, records[i], config)
                rewards = -config.kl_coef * (logp - ref_logp)
                rewards[-1] += episode_rewards[i]
                adv, ret = gae(rewards, values.float(), config.gamma, config.lam)
                batch.append(
                    {"rec": records[i], "old_logp": logp.float(), "old_values": values.float(), "adv": adv, "ret": ret,
                     "kl": float((logp - ref_logp).mean())}
                )  # fmt: skip
        if batch:
            flat = whiten(torch.cat([b["adv"] for b in batch]))
            at = 0
            for b in batch:
                n = b["adv"].numel()
                b["adv"], at = flat[at : at + n], at + n
        policy.train()
        losses, vlosses, fracs = [], [], []
        size = config.minibatch or max(1, len(batch))
        for _ in range(config.ppo_epochs):
            for m0 in range(0, len(batch), size):
                mini = batch[m0 : m0 + size]
                optimizer.zero_grad()
                for start in range(0, len(mini), config.micro_batch):  # accumulate, one step a minibatch
                    total = torch.zeros(())
                    for b in mini[start : start + config.micro_batch]:
                        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                            logp, values = _forward(policy, head, b["rec"], config, critic_only=warmup)
                        mask = torch.ones_like(b["adv"])
                        pl, frac = policy_loss(logp.float(), b["old_logp"], b["adv"], mask, config.clip)
                        vl = value_loss(values.float(), b["old_values"], b["ret"], mask, config.value_clip)
                        # the warm-up trains the critic alone: no policy term, the backbone detached
                        total = total + ((0.0 if warmup else pl) + config.value_coef * vl) / len(mini)
                        losses.append(float(pl.detach()))
                        vlosses.append(float(vl.detach()))
                        fracs.append(frac)
                    total.backward()
                torch.nn.utils.clip_grad_norm_(list(policy.parameters()) + list(head.parameters()), 1.0)
                optimizer.step()
        n = max(1, len(records))
        result.curves.append(
            {
                "step": step + 1,
                "reward": sum(episode_rewards) / n,
                "policy_loss": sum(losses) / max(1, len(losses)),
                "value_loss": sum(vlosses) / max(1, len(vlosses)),
                "clip_fraction": sum(fracs) / max(1, len(fracs)),
                "kl": sum(b["kl"] for b in batch) / max(1, len(batch)),
                "tool_call_rate": sum(r.stats.valid_calls > 0 for r in records) / n,
                "valid_format": sum(bool(r.stats.valid_format) for r in records) / n,
                "episodes": len(records),
                "trained_episodes": len(batch),
                "critic_only": warmup,
                "step_s": time.perf_counter() - t_step,
            }
        )
        result.steps = step + 1
        if validation is not None and ((step + 1) % max(1, validation.every) == 0 or step + 1 == config.steps):
            validate(step + 1)
        if work is not None and config.save_every and (step + 1) % config.save_every == 0 and step + 1 < config.steps:
            work.mkdir(parents=True, exist_ok=True)
            if best is not None:
                best.save(work / BEST_POINT_FILE)
            _save_state(work, step + 1, modules, optimizer, result, None if best is None else best.step)
        c = result.curves[-1]
        print(
            f"[ppo] step {step + 1}/{config.steps}: reward {c['reward']:.4g}, policy loss {c['policy_loss']:.4g}, "
            f"value loss {c['value_loss']:.4g}, kl {c['kl']:.3g} ({time.perf_counter() - t0:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
    if any(math.isnan(c["policy_loss"]) for c in result.curves):  # before saving: no diverged checkpoint
        raise FloatingPointError("PPO diverged: a policy loss is NaN")
    result.chosen_step = best.finish(result.steps, modules) if best is not None else result.steps
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    policy.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    save_value_head(head, out)
    log = {"curves": result.curves, "config": result.config, "validation": result.validation}
    (out / "ppo_log.json").write_text(json.dumps(log | {"chosen_step": result.chosen_step}, indent=1))
    result.wall_s = time.perf_counter() - t0
    return result
