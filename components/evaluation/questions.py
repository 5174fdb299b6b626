"""External evaluation questions: GRBench question files and any JSON-lines question/answer set.

One JSON object per line with ``question`` and ``answer`` (GRBench: ``qid``, ``question``,
``answer``, optional ``level``; also accepted: ``id``, ``answer_type``, ``type``). Blank lines are
skipped. A malformed file is an error naming every bad line, and nothing is loaded from it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["QuestionFileError", "load_questions"]

_LEVELS = {"easy": "easy", "medium": "medium", "hard": "hard"}


class QuestionFileError(ValueError):
    pass


def load_questions(path: str | Path) -> list[dict[str, Any]]:
    """Rows ``id``, ``question``, ``answer``, ``answer_type``, ``level``, ``qtype`` in file order."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionFileError(f"{p}: cannot read: {exc}") from exc
    rows, errors = [], []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            errors.append(f"line {n}: not JSON ({exc.msg})")
            continue
        if not isinstance(obj, dict):
            errors.append(f"line {n}: not a JSON object")
            continue
        q, a = obj.get("question"), obj.get("answer")
        if not isinstance(q, str) or not q.strip():
            errors.append(f"line {n}: 'question' must be a non-empty string")
            continue
        if a is None or (isinstance(a, str) and not a.strip()):
            errors.append(f"line {n}: 'answer' is missing or empty")
            continue
        answer = "; ".join(map(str, a)) if isinstance(a, list) else str(a)
        level = str(obj.get("level", "")).lower()
        rows.append({"id": str(obj.get("qid", obj.get("id", n))), "question": q.strip(), "answer": answer,
                     "answer_type": obj.get("answer_type") or ("set" if isinstance(a, list) else None),
                     "level": _LEVELS.get(level, level or None), "qtype": obj.get("type")})
    if errors:
        raise QuestionFileError(f"{p}: {len(errors)} bad line(s): " + "; ".join(errors[:10]))
    if not rows:
        raise QuestionFileError(f"{p}: no questions")
    return rows
