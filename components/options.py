"""The one check every config section of a domain YAML goes through."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

__all__ = ["checked_options"]


def checked_options(cls: type, raw: Mapping[str, Any] | None, section: str) -> dict[str, Any]:
    """``raw`` as a plain dict for dataclass ``cls``; a key ``cls`` has no field for is a
    ``ValueError`` naming the section, the unknown keys and the known ones."""
    if raw is not None and not isinstance(raw, Mapping):
        raise ValueError(f"the {section} section must be a mapping, got {type(raw).__name__}")
    out = dict(raw or {})
    known = {f.name for f in fields(cls)}
    unknown = set(out) - known
    if unknown:
        raise ValueError(f"unknown {section} options {sorted(unknown)}; known: {sorted(known)}")
    return out
