"""Question sets that carry gold **Cypher** instead of gold answers — the way public text-to-Cypher
sets ship (JSONL or CSV with ``question`` + ``cypher``; optional ``id``, ``params`` as a JSON
object, ``level``, ``type``).

:func:`load_question_file` reads either format (a ``.csv`` suffix means CSV, anything else JSON
lines); a row may carry ``answer`` (used as given) or ``cypher`` (resolved on the graph). A
malformed file — bad JSON, a row with neither ``answer`` nor ``cypher``, a duplicate id — is a
:class:`~components.evaluation.questions.QuestionFileError` naming every bad line.

:func:`resolve_gold` runs every gold query through the **read-only query path** on the graph
(writes and procedures refused, schema checked, parameters bound — never formatted in) and infers
the answer and its type from the result's shape:

* one row × one column → by value: ``true`` / ``false`` → boolean (``yes`` / ``no``); a number →
  number; a string → entity; a node → its display name (``name``, ``title`` …);
* one column × several rows → a set (distinct members, nodes by display name);
* anything else (several columns, a map, a list cell, a path, null) → not scorable.

A query that fails (syntax, refused, unknown label, timeout) or returns nothing is **reported and
skipped**, never silently dropped: each skipped row carries its id, line, reason and detail, and
the evaluation report lists them.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from components.evaluation.questions import QuestionFileError
from components.graph.errors import GraphError

__all__ = ["SKIP_REASONS", "GoldResolution", "load_question_file", "resolve_gold"]

SKIP_REASONS: Final = {
    "query_failed": "the gold query failed (syntax, refused, unknown label or property, timeout)",
    "returned_nothing": "the gold query returned no rows",
    "not_scorable": "the result's shape is not an entity, number, boolean or set answer",
}

#: rows a gold query may return before its answer is not a usable set
MAX_SET_ROWS: Final = 200


@dataclass(frozen=True)
class GoldResolution:
    rows: list[dict[str, Any]]  # scorable rows: question, answer, answer_type …
    skipped: list[dict[str, Any]]  # id, line, question, cypher, reason, detail

    def summary(self) -> dict[str, Any]:
        reasons: dict[str, int] = {}
        for s in self.skipped:
            reasons[s["reason"]] = reasons.get(s["reason"], 0) + 1
        return {"scorable": len(self.rows), "skipped": len(self.skipped), "skipped_by_reason": reasons}


def load_question_file(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSONL or CSV question file (module docstring); ``cypher`` rows keep their query,
    ``params`` and file ``line`` and get their answer from :func:`resolve_gold`."""
    p = Path(path)
    if p.suffix.lower() == ".csv":
        return _csv_rows(p)
    if not p.is_file():
        raise QuestionFileError(f"{p}: no such file")
    raw = []
    from components.graph.jsonl import JsonlFileError, read_jsonl

    errors: list[str] = []
    try:
        for n, obj, error in read_jsonl(p):
            if error:
                errors.append(error["message"])
            elif not isinstance(obj, dict):
                errors.append(f"line {n}: not a JSON object")
            else:
                raw.append((n, obj))
    except JsonlFileError as exc:
        raise QuestionFileError(str(exc)) from None
    return _rows(p, raw, errors)


def _csv_rows(p: Path) -> list[dict[str, Any]]:
    try:
        with open(p, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames or "question" not in reader.fieldnames:
                raise QuestionFileError(f"{p}: a CSV question file needs a 'question' header column")
            raw = [
                (n, {k: v for k, v in row.items() if k is not None and v not in (None, "")})
                for n, row in enumerate(reader, 2)
            ]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise QuestionFileError(f"{p}: cannot read the CSV file ({exc})") from None
    return _rows(p, raw, [])


def _rows(p: Path, raw: Sequence[tuple[int, dict[str, Any]]], errors: list[str]) -> list[dict[str, Any]]:
    out, ids = [], set()
    for n, obj in raw:
        question, cypher = obj.get("question"), obj.get("cypher")
        if not isinstance(question, str) or not question.strip():
            errors.append(f"line {n}: 'question' must be a non-empty string")
            continue
        if obj.get("answer") in (None, "") and not (isinstance(cypher, str) and cypher.strip()):
            errors.append(f"line {n}: needs 'answer' or 'cypher'")
            continue
        params = obj.get("params") or {}
        if isinstance(params, str):
            try:
                params = json.loads(params)
            except ValueError:
                params = None
        if not isinstance(params, dict):
            errors.append(f"line {n}: 'params' must be a JSON object")
            continue
        row_id = str(obj.get("qid", obj.get("id", n)))
        if row_id in ids:
            errors.append(f"line {n}: duplicate question id {row_id!r}")
            continue
        ids.add(row_id)
        level = str(obj.get("level", "")).lower()
        out.append(
            {
                "id": row_id,
                "line": n,
                "question": question.strip(),
                "answer": None if obj.get("answer") in (None, "") else obj["answer"],
                "answer_type": obj.get("answer_type"),
                "cypher": cypher.strip() if isinstance(cypher, str) and cypher.strip() else None,
                "params": params,
                "level": level or None,
                "qtype": obj.get("type"),
            }
        )
    if errors:
        raise QuestionFileError(f"{p}: {len(errors)} bad line(s): " + "; ".join(errors[:10]))
    if not out:
        raise QuestionFileError(f"{p}: no questions")
    return out


def _display(value: Any, schema: Any) -> str | None:
    """A node cell's display name; ``None`` for anything that is not a node with one."""
    from components.quizzer.context import display_property

    if isinstance(value, dict) and "_label" in value:
        label = str(value["_label"])
        prop = display_property(schema, label) if label in schema.labels else "name"
        shown = value.get(prop)
        return None if shown is None else str(shown)
    return None


def _scalar(value: Any, schema: Any) -> tuple[str, str] | None:
    """``(answer, answer type)`` of one result cell, or ``None`` when it is not one."""
    if isinstance(value, bool):
        return ("yes" if value else "no"), "boolean"
    if isinstance(value, (int, float)):
        if not math.isfinite(value):  # NaN / infinity: no answer a model could give
            return None
        return _number_text(value), "number"
    if isinstance(value, str) and value.strip():
        return value, "entity"
    shown = _display(value, schema)
    return (shown, "entity") if shown else None


def _number_text(value: int | float) -> str:
    """``2`` for 2 and 2.0 alike (as a single answer and as a set member), ``2.5`` otherwise."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _answer(columns: Sequence[str], rows: Sequence[Sequence[Any]], schema: Any) -> tuple[str, str] | str:
    """The answer and type a result's shape gives, or a skip reason."""
    if not rows:
        return "returned_nothing"
    if len(columns) != 1:
        return "not_scorable"
    if len(rows) == 1:
        return _scalar(rows[0][0], schema) or "not_scorable"
    members: list[str] = []
    for (value,) in rows:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            member = _number_text(value) if math.isfinite(value) else None
        elif isinstance(value, str):
            member = value
        else:
            member = _display(value, schema)
        if member is None:
            return "not_scorable"
        if member not in members:
            members.append(member)
    return ("; ".join(sorted(members)), "set") if len(members) > 1 else (members[0], "entity")


def resolve_gold(rows: Sequence[dict[str, Any]], db_location: str, *, timeout_ms: int = 10_000) -> GoldResolution:
    """Gold answers for the ``cypher`` rows (module docstring); rows with an ``answer`` pass
    through as they are."""
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph import open_backend

    out, skipped = [], []
    backend = open_backend(db_location)
    try:
        schema = backend.schema()
        path = ReadOnlyQueryPath(backend, schema=schema)
        for row in rows:
            if not row.get("cypher"):
                out.append(_plain(row))
                continue
            base = {k: row.get(k) for k in ("id", "line", "question", "cypher")}
            try:
                result = path.run(row["cypher"], row.get("params") or None, limit=MAX_SET_ROWS, timeout_ms=timeout_ms)
            except GraphError as exc:
                skipped.append({**base, "reason": "query_failed", "detail": f"{type(exc).__name__}: {exc}"[:500]})
                continue
            if result.truncated:
                skipped.append({**base, "reason": "not_scorable", "detail": f"more than {MAX_SET_ROWS} rows"})
                continue
            got = _answer(result.columns, result.rows, schema)
            if isinstance(got, str):
                shape = f"{len(result.rows)} row(s) × {len(result.columns)} column(s)"
                skipped.append({**base, "reason": got, "detail": shape})
                continue
            answer, answer_type = got
            out.append({**_plain(row), "answer": answer, "answer_type": row.get("answer_type") or answer_type})
    finally:
        backend.close()
    return GoldResolution(out, skipped)


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """An evaluation row (the fields :func:`~components.evaluation.questions.load_questions`
    gives), keeping the gold query for the report."""
    answer = row.get("answer")
    if isinstance(answer, list):
        answer = "; ".join(map(str, answer))
    return {
        "id": row["id"],
        "question": row["question"],
        "answer": None if answer is None else str(answer),
        "answer_type": row.get("answer_type"),
        "level": row.get("level"),
        "qtype": row.get("qtype"),
        **({"cypher": row["cypher"]} if row.get("cypher") else {}),
    }
