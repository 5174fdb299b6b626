"""Evaluation: GRIT-style graph-reasoning tasks (more arrives with the evaluation reports)."""

from components.evaluation.grit import NAMINGS, SCENARIOS, TASKS, GritItem, build_item, generate_items

__all__ = ["NAMINGS", "SCENARIOS", "TASKS", "GritItem", "build_item", "generate_items"]
