"""Certification (docs/certification.md): the program checks and the strict / partial / hard-failure status,
the two-stage semantic judge and the leakage filter."""

from components.certify.certifier import REASONS, RULES_VERSION, STATUSES, Certificate, certify, certify_many
from components.certify.checks import (
    CHECK_NAMES,
    UNDETERMINED,
    CheckResult,
    check_format_provenance_safety,
    check_grounding,
    check_reexecution,
    check_schema_static,
)
from components.certify.judge import (
    JUDGE_VERDICTS,
    JudgeInput,
    JudgeVerdict,
    SemanticJudge,
    combine_verdicts,
    judge_messages,
    parse_verdict,
)
from components.certify.leakage import (
    LEAKAGE_WHERE,
    EvalItem,
    LeakageFilter,
    LeakageResult,
    build_lexicon,
    load_eval_questions,
)

__all__ = [
    "CHECK_NAMES",
    "JUDGE_VERDICTS",
    "LEAKAGE_WHERE",
    "EvalItem",
    "JudgeInput",
    "JudgeVerdict",
    "LeakageFilter",
    "LeakageResult",
    "SemanticJudge",
    "build_lexicon",
    "combine_verdicts",
    "judge_messages",
    "load_eval_questions",
    "parse_verdict",
    "REASONS",
    "RULES_VERSION",
    "STATUSES",
    "UNDETERMINED",
    "Certificate",
    "CheckResult",
    "certify",
    "certify_many",
    "check_format_provenance_safety",
    "check_grounding",
    "check_reexecution",
    "check_schema_static",
]
