"""Training a domain's graph agent with environment tokens masked out of every loss.

The package exports the trainers and the pair builder: :func:`run_sft` (the supervised
warm-start on teacher trajectories, :func:`sft_example`), :func:`run_grpo` (GRPO with TRL,
single-turn or multi-turn over a tool environment via :class:`MultiTurn`), :func:`run_dpo` (DPO
on multi-turn trajectory pairs, :func:`preference_example`) and :func:`build_pair` /
:func:`rank_key` (GraphDancer's best-vs-worst preference pairs). The submodules add the
checkpoint presets and model card (``checkpoint``), teacher trajectories (``teacher``),
preference sampling (``preferences``), the RL stages (``stages``) and the data and reward
ablations (``ablations``)."""

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
