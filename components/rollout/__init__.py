"""Multi-turn rollouts with a loss mask over environment tokens, and the masked loss."""

from components.rollout.loss import completion_logprobs, masked_nll
from components.rollout.runner import (
    RolloutConfig,
    RolloutRecord,
    RolloutRunner,
    TokenBackend,
    TrajectoryStats,
    evidence_hit,
)

__all__ = [
    "RolloutConfig",
    "RolloutRecord",
    "RolloutRunner",
    "TokenBackend",
    "TrajectoryStats",
    "completion_logprobs",
    "evidence_hit",
    "masked_nll",
]
