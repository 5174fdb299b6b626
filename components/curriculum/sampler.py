"""GraphDancer's curriculum: round decomposition, difficulty levels, and the
easy-to-hard level sampler.

**Rounds.** A trajectory is a sequence of tool-call rounds; ``U_t`` is the set of node ids round
``t`` returned. An **S-round** returns exactly one node (``|U_t| = 1``), an **E-round** more than
one (``|U_t| > 1``); a round that returns none is neither (a failed or empty lookup).

**Levels.** Easy: one round. Medium: several rounds, at most one E-round. Hard: two or more
E-rounds. (A trajectory with no round at all — answered without the graph — is Easy.) Items
graph lookup cannot answer (recommendation, outside knowledge) are **OOD**: never trained on,
evaluated only; they carry no level for sampling.

**Sampler.** ``p(t, k) = (1 − η(t))·g(t, k) + η(t)·q(k)`` over k ∈ {Easy, Medium, Hard}:

* ``η(t) = η_start + t/(T − 1)·(η_end − η_start)`` (η 0.2 → 0.8; ``T`` the stage's steps);
* ``q = [0.5, 0.5, 0]``, a fixed level prior;
* ``g(t, k)`` the Gaussian easy-to-hard scheduler of E2H (Parashar et al.), as its reference
  code defines it: a Gaussian over the level index whose mean moves from Easy to Hard,
  ``μ(t) = (t/(T − 1))^κ · (K − 1)``, ``g(t, k) = exp(−(k − μ)²/2σ²) / Σ_j exp(−(j − μ)²/2σ²)``
  with κ = 3 (the shape: the mean stays near Easy for most of the stage) and σ = 0.75.

Where the sources leave room, we chose: κ is the exponent of the mean's progress (the only
shape parameter E2H's scheduler has); no probability floor (E2H's optional ``min_prob``) —
GraphDancer's own mixture with ``q`` plays that role; progress is ``t/(T − 1)``, as in η, so
the last step of a stage is fully "hard" (E2H's code uses ``t/T``). A level with no items gets
probability 0 and the rest is renormalised. Pick a level by ``p``, then an item uniformly
inside it. :meth:`CurriculumSampler.state_dict` / :meth:`load_state_dict` checkpoint the step
and the random state.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "LEVELS",
    "CurriculumConfig",
    "CurriculumSampler",
    "eta",
    "gaussian_schedule",
    "level_of",
    "level_probabilities",
    "round_kinds",
]

LEVELS: Final = ("easy", "medium", "hard")


def round_kinds(returned: Iterable[Sequence[Any] | int]) -> list[str]:
    """``"S"`` / ``"E"`` / ``""`` per round from each round's returned node ids (or their count).

    >>> round_kinds([["a"], ["b", "c"], []])
    ['S', 'E', '']
    """
    out = []
    for u in returned:
        n = u if isinstance(u, int) else len(set(u))
        out.append("S" if n == 1 else "E" if n > 1 else "")
    return out


def level_of(returned: Sequence[Sequence[Any] | int]) -> str:
    """The level of a trajectory from its rounds' returned node ids (see the module docstring).

    >>> level_of([["a"]]), level_of([["a"], ["b", "c"], ["d"]]), level_of([["a", "b"], ["c", "d"]])
    ('easy', 'medium', 'hard')
    """
    kinds = round_kinds(returned)
    if kinds.count("E") >= 2:
        return "hard"
    if len(kinds) <= 1:
        return "easy"
    return "medium"


@dataclass(frozen=True)
class CurriculumConfig:
    kappa: float = 3.0
    sigma: float = 0.75
    eta_start: float = 0.2
    eta_end: float = 0.8
    prior: tuple[float, float, float] = (0.5, 0.5, 0.0)

    def __post_init__(self) -> None:
        if self.sigma <= 0 or self.kappa <= 0:
            raise ValueError("sigma and kappa must be > 0")
        if len(self.prior) != 3 or abs(sum(self.prior) - 1.0) > 1e-9 or min(self.prior) < 0:
            raise ValueError("prior must be three non-negative probabilities summing to 1")
        for v in (self.eta_start, self.eta_end):
            if not 0.0 <= v <= 1.0:
                raise ValueError("eta_start and eta_end must be in [0, 1]")


def _progress(t: int, total: int) -> float:
    if total < 1:
        raise ValueError("the stage must have at least one step")
    if not 0 <= t < total:
        raise ValueError(f"step {t} is outside the stage's 0..{total - 1}")
    return t / (total - 1) if total > 1 else 1.0


def eta(t: int, total: int, config: CurriculumConfig = CurriculumConfig()) -> float:
    """η(t), linear from ``eta_start`` (t = 0) to ``eta_end`` (t = T − 1).

    >>> eta(0, 5), eta(2, 5), eta(4, 5)
    (0.2, 0.5, 0.8)
    """
    return config.eta_start + _progress(t, total) * (config.eta_end - config.eta_start)


def gaussian_schedule(
    t: int, total: int, config: CurriculumConfig = CurriculumConfig(), levels: int = 3
) -> list[float]:
    """g(t, ·): E2H's Gaussian scheduler over the level indices.

    >>> [round(x, 3) for x in gaussian_schedule(0, 5)]
    [0.695, 0.286, 0.02]
    """
    mu = _progress(t, total) ** config.kappa * (levels - 1)
    w = [math.exp(-((k - mu) ** 2) / (2 * config.sigma**2)) for k in range(levels)]
    s = sum(w)
    return [x / s for x in w]


def level_probabilities(
    t: int, total: int, config: CurriculumConfig = CurriculumConfig(), available: Sequence[bool] = (True, True, True)
) -> list[float]:
    """p(t, ·) = (1 − η)·g + η·q, with empty levels removed and the rest renormalised.

    >>> [round(x, 3) for x in level_probabilities(0, 5)]
    [0.656, 0.328, 0.016]
    """
    g = gaussian_schedule(t, total, config)
    e = eta(t, total, config)
    p = [(1 - e) * gk + e * qk for gk, qk in zip(g, config.prior, strict=True)]
    p = [x if ok else 0.0 for x, ok in zip(p, available, strict=True)]
    s = sum(p)
    if s <= 0:
        raise ValueError("no level with items has positive probability")
    return [x / s for x in p]


@dataclass
class CurriculumSampler:
    """Draws training items stage-step by stage-step: a level by ``p(t, ·)``, then an item of
    that level uniformly. ``items_by_level`` maps ``easy`` / ``medium`` / ``hard`` to item ids
    (OOD items must not be passed)."""

    items_by_level: Mapping[str, Sequence[Any]]
    total_steps: int
    config: CurriculumConfig = field(default_factory=CurriculumConfig)
    seed: int = 0
    step: int = 0
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        unknown = set(self.items_by_level) - set(LEVELS)
        if unknown:
            raise ValueError(f"unknown levels {sorted(unknown)}; expected {LEVELS}")
        if not any(self.items_by_level.get(lv) for lv in LEVELS):
            raise ValueError("the curriculum has no items")
        self._rng = random.Random(self.seed)

    def probabilities(self, t: int | None = None) -> list[float]:
        available = [bool(self.items_by_level.get(lv)) for lv in LEVELS]
        return level_probabilities(self.step if t is None else t, self.total_steps, self.config, available)

    def sample(self, batch: int = 1) -> list[tuple[str, Any]]:
        """``batch`` draws ``(level, item)`` at the current step, then advance one step (the last
        step repeats once the stage is over)."""
        p = self.probabilities()
        out = []
        for _ in range(batch):
            level = self._rng.choices(LEVELS, weights=p)[0]
            out.append((level, self._rng.choice(list(self.items_by_level[level]))))
        self.step = min(self.step + 1, self.total_steps - 1)
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"step": self.step, "rng": self._rng.getstate(), "seed": self.seed, "total_steps": self.total_steps}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("total_steps") != self.total_steps:
            raise ValueError("the checkpoint was made for a stage of another length")
        self.step = int(state["step"])
        rng = state["rng"]
        self._rng.setstate((rng[0], tuple(rng[1]), rng[2]))
