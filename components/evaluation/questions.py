"""External evaluation questions: GRBench question files and any JSON-lines question/answer set.

One JSON object per line with ``question`` and ``answer`` (GRBench: ``qid``, ``question``,
``answer``, optional ``level``; also accepted: ``id``, ``answer_type``, ``type``). Blank lines are
skipped; lines are read by :func:`components.graph.jsonl.read_jsonl` (strict JSON). A malformed
file — a bad line, a duplicate question id, no question at all — is an error naming every bad
line, and nothing is loaded from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.graph.jsonl import JsonlFileError, read_jsonl
from components.store.fingerprint import read_parquet

__all__ = ["QuestionFileError", "load_questions", "split_questions"]

_LEVELS = {"easy": "easy", "medium": "medium", "hard": "hard"}


class QuestionFileError(ValueError):
    pass


def load_questions(path: str | Path) -> list[dict[str, Any]]:
    """Rows ``id``, ``question``, ``answer``, ``answer_type``, ``level``, ``qtype`` in file order."""
    p = Path(path)
    rows, errors, ids = [], [], set()
    try:
        for n, obj, error in read_jsonl(p):
            if error:
                errors.append(error["message"])
                continue
            if not isinstance(obj, dict):
                errors.append(f"line {n}: not a JSON object")
                continue
            row = _row(n, obj, errors)
            if row is None:
                continue
            if row["id"] in ids:
                errors.append(f"line {n}: duplicate question id {row['id']!r}")
                continue
            ids.add(row["id"])
            rows.append(row)
    except JsonlFileError as exc:
        raise QuestionFileError(str(exc)) from None
    if errors:
        raise QuestionFileError(f"{p}: {len(errors)} bad line(s): " + "; ".join(errors[:10]))
    return rows


def _row(n: int, obj: dict[str, Any], errors: list[str]) -> dict[str, Any] | None:
    q, a = obj.get("question"), obj.get("answer")
    if not isinstance(q, str) or not q.strip():
        errors.append(f"line {n}: 'question' must be a non-empty string")
        return None
    if a is None or (isinstance(a, str) and not a.strip()):
        errors.append(f"line {n}: 'answer' is missing or empty")
        return None
    answer = "; ".join(map(str, a)) if isinstance(a, list) else str(a)
    level = str(obj.get("level", "")).lower()
    return {
        "id": str(obj.get("qid", obj.get("id", n))),
        "question": q.strip(),
        "answer": answer,
        "answer_type": obj.get("answer_type") or ("set" if isinstance(a, list) else None),
        "level": _LEVELS.get(level, level or None),
        "qtype": obj.get("type"),
    }


def split_questions(
    curriculum_path: str | Path, certified_path: str | Path | None = None, split: str = "test"
) -> list[dict[str, Any]]:
    """The rows of one split of a curriculum table, in its stored order, each with its
    question type (``qtype``: the quizzer's ``question_pattern`` axis) and its template family
    (``family``: :func:`~components.evaluation.families.family_label`), from the certified table
    when given, for the report's breakdowns and the answer prior."""
    import json

    from components.evaluation.families import family_label

    certified = {r["id"]: r for r in read_parquet(certified_path)} if certified_path else {}
    out = []
    for r in read_parquet(curriculum_path):
        if r["split"] != split:
            continue
        row = certified.get(r["id"], {})
        axes = json.loads(row.get("axes_json") or "{}")
        out.append({**r, "qtype": axes.get("question_pattern"), "family": family_label(row) if row else None})
    return out
