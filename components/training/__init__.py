"""Training: the masked SFT warm-start and GraphDancer's preference pairs (Part 6, in progress)."""

from components.training.pairs import PairOutcome, build_pair, rank_key
from components.training.sft import SFTResult, SFTRunConfig, run_sft, sft_example

__all__ = ["PairOutcome", "SFTResult", "SFTRunConfig", "build_pair", "rank_key", "run_sft", "sft_example"]
