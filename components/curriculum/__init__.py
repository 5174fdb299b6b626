"""GraphDancer's curriculum: rounds, levels, the easy-to-hard sampler, entity-grouped splits."""

from components.curriculum.build import (
    CURRICULUM_SPLITS,
    build_curriculum,
    build_curriculum_splits,
    curriculum_summary,
    grounded_entities,
    split_items,
    training_items,
)
from components.curriculum.levels import estimate_level, estimate_rounds
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
    "CURRICULUM_SPLITS",
    "LEVELS",
    "build_curriculum",
    "build_curriculum_splits",
    "curriculum_summary",
    "estimate_level",
    "estimate_rounds",
    "grounded_entities",
    "SPLITS",
    "CurriculumConfig",
    "CurriculumSampler",
    "entity_grouped_splits",
    "eta",
    "gaussian_schedule",
    "level_of",
    "level_probabilities",
    "round_kinds",
    "split_items",
    "training_items",
]
