"""Certification (SPEC §4): the program checks and the strict / partial / hard-failure status."""

from components.certify.certifier import REASONS, STATUSES, Certificate, certify
from components.certify.checks import (
    CHECK_NAMES,
    UNDETERMINED,
    CheckResult,
    check_format_provenance_safety,
    check_grounding,
    check_reexecution,
    check_schema_static,
)

__all__ = [
    "CHECK_NAMES",
    "REASONS",
    "STATUSES",
    "UNDETERMINED",
    "Certificate",
    "CheckResult",
    "certify",
    "check_format_provenance_safety",
    "check_grounding",
    "check_reexecution",
    "check_schema_static",
]
