"""Evidence rubric, answer metrics and rewards (docs/rubric.md)."""

from components.rubric.evidence import (
    EvidenceScore,
    multiset_f1,
    s_aggregate,
    s_align,
    s_evidence,
    s_pair,
    score_evidence,
)
from components.rubric.metrics import answer_metrics, exact_match, normalize_answer, raw_exact_match, rouge_l, token_f1
from components.rubric.rewards import REWARDS, extract_answer, get_reward

__all__ = [
    "REWARDS",
    "EvidenceScore",
    "answer_metrics",
    "exact_match",
    "extract_answer",
    "get_reward",
    "multiset_f1",
    "normalize_answer",
    "raw_exact_match",
    "rouge_l",
    "s_aggregate",
    "s_align",
    "s_evidence",
    "s_pair",
    "score_evidence",
    "token_f1",
]
