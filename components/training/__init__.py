"""Training (Part 6, in progress): the masked SFT warm-start, GRPO (single- and multi-turn),
masked DPO on trajectories, and GraphDancer's preference pairs."""

from components.training.dpo import DPORunConfig, preference_example, run_dpo
from components.training.grpo import GRPORunConfig, MultiTurn, TrainResult, run_grpo
from components.training.pairs import PairOutcome, build_pair, rank_key
from components.training.sft import SFTResult, SFTRunConfig, run_sft, sft_example

__all__ = [
    "DPORunConfig",
    "GRPORunConfig",
    "MultiTurn",
    "PairOutcome",
    "SFTResult",
    "SFTRunConfig",
    "TrainResult",
    "build_pair",
    "preference_example",
    "rank_key",
    "run_dpo",
    "run_grpo",
    "run_sft",
    "sft_example",
]
