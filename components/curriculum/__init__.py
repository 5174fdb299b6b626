"""GraphDancer's curriculum: rounds, levels, the easy-to-hard sampler, entity-grouped splits."""

from components.curriculum.sampler import (
    LEVELS,
    CurriculumConfig,
    CurriculumSampler,
    eta,
    gaussian_schedule,
    level_of,
    level_probabilities,
    round_kinds,
)
from components.curriculum.splits import SPLITS, entity_grouped_splits

__all__ = [
    "LEVELS",
    "SPLITS",
    "CurriculumConfig",
    "CurriculumSampler",
    "entity_grouped_splits",
    "eta",
    "gaussian_schedule",
    "level_of",
    "level_probabilities",
    "round_kinds",
]
