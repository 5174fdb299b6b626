"""Reading a JSONL file of candidate records for certification, one line at a time, so that no
malformed line can take the batch down.

:func:`read_candidate_lines` returns one :class:`CandidateLine` per non-blank input line: the
parsed :class:`~components.quizzer.candidate.QACandidate`, or an error with a stable code from
:data:`LINE_ERRORS` — never an exception. A file that cannot be read at all raises
:class:`CandidateFileError` with a code from :data:`FILE_ERRORS`.

A record has the fields of ``QACandidate.to_record()``; each nested field may come as itself
(``evidence``) or as JSON text (``evidence_json``). Required: ``id``, ``question``,
``answer_type``, ``final_program``, ``evidence`` and ``answer`` or ``answer_value`` — only ``id``
when ``failure_reason`` says the quizzer failed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from components.graph.jsonl import MAX_LINE_BYTES, JsonlFileError, read_jsonl
from components.quizzer.candidate import FAILURE_REASONS, QUIZZER_KINDS, QACandidate

__all__ = [
    "FILE_ERRORS",
    "LINE_ERRORS",
    "MAX_LINE_BYTES",
    "CandidateFileError",
    "CandidateLine",
    "read_candidate_lines",
]

LINE_ERRORS: Final[Mapping[str, str]] = {
    "bad_json": "the line is not strict UTF-8 JSON (no NaN, no duplicate keys, nested at most 64 deep)",
    "not_an_object": "the line is JSON, but an array, string, number or null instead of an object",
    "missing_field": "a required field is missing",
    "bad_field": "a field has the wrong type or an unknown value",
    "bad_json_field": "a *_json field is not JSON text decoding to the type the field holds",
    "line_too_long": f"the line is longer than {MAX_LINE_BYTES} bytes",
}
FILE_ERRORS: Final[Mapping[str, str]] = {
    "file_not_found": "the candidates file does not exist",
    "file_unreadable": "the candidates file cannot be read (permissions, a folder, an I/O error)",
    "empty_file": "the candidates file holds no candidate line",
}

_NESTED: Final = {
    "axes": dict,
    "start_node": dict,
    "neighbourhood": dict,
    "trace": list,
    "evidence": list,
    "meta": dict,
}
_TEXT: Final = ("question", "answer", "answer_type", "final_program", "failure_detail", "model")
_INTS: Final = ("seed", "index", "prompt_tokens", "completion_tokens")
_REQUIRED: Final = ("question", "answer_type", "final_program", "evidence")


class CandidateFileError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class CandidateLine:
    line: int
    candidate: QACandidate | None = None
    error: dict[str, str] | None = None
    id: str | None = None  # the record's id when it could be read, even for a bad line

    @property
    def ok(self) -> bool:
        return self.candidate is not None


class _Bad(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _field(raw: Mapping[str, Any], name: str, kind: type) -> Any:
    """A nested field given as itself or as ``<name>_json`` text."""
    if name in raw and raw[name] is not None:
        value = raw[name]
    elif f"{name}_json" in raw and raw[f"{name}_json"] is not None:
        text = raw[f"{name}_json"]
        if not isinstance(text, str):
            raise _Bad("bad_json_field", f"'{name}_json' must be JSON text, not {type(text).__name__}")
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise _Bad("bad_json_field", f"'{name}_json' is not JSON: {str(exc)[:120]}") from None
        if value is None:
            return None
        if not isinstance(value, kind):
            raise _Bad("bad_json_field", f"'{name}_json' decodes to {type(value).__name__}, not {kind.__name__}")
        return value
    else:
        return None
    if not isinstance(value, kind):
        raise _Bad("bad_field", f"'{name}' must be a {kind.__name__}, not {type(value).__name__}")
    return value


def _candidate(raw: Any) -> QACandidate:
    if not isinstance(raw, dict):
        raise _Bad("not_an_object", f"expected a JSON object, got {type(raw).__name__}")
    cid = raw.get("id")
    if cid is None or cid == "":
        raise _Bad("missing_field", "a candidate record needs an 'id'")
    if not isinstance(cid, str):
        raise _Bad("bad_field", f"'id' must be a string, not {type(cid).__name__}")
    record: dict[str, Any] = {"id": cid}
    for name in _TEXT:
        v = raw.get(name)
        if v is not None and not isinstance(v, str):
            raise _Bad("bad_field", f"'{name}' must be a string, not {type(v).__name__}")
        record[name] = v
    for name in _INTS:
        v = raw.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise _Bad("bad_field", f"'{name}' must be an integer, not {type(v).__name__}")
        record[name] = v
    for name, kind in _NESTED.items():
        record[f"{name}_json"] = _field(raw, name, kind)
    for i, item in enumerate(record["evidence_json"] or []):
        if not isinstance(item, dict):
            raise _Bad("bad_field", f"evidence item {i} must be an object, not {type(item).__name__}")
    value = raw["answer_value"] if raw.get("answer_value") is not None else None
    if value is None and raw.get("answer_value_json") is not None:
        text = raw["answer_value_json"]
        if not isinstance(text, str):
            raise _Bad("bad_json_field", "'answer_value_json' must be JSON text")
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise _Bad("bad_json_field", f"'answer_value_json' is not JSON: {str(exc)[:120]}") from None
    if value is not None and not isinstance(value, (str, int, float, bool, list)):
        raise _Bad("bad_field", f"'answer_value' must be a JSON scalar or list, not {type(value).__name__}")
    record["answer_value_json"] = value
    quizzer, failure = raw.get("quizzer"), raw.get("failure_reason")
    if quizzer is not None and quizzer not in QUIZZER_KINDS:
        raise _Bad("bad_field", f"'quizzer' must be one of {list(QUIZZER_KINDS)}")
    if failure is not None and failure not in FAILURE_REASONS:
        raise _Bad("bad_field", f"'failure_reason' {str(failure)[:60]!r} is not a known failure reason")
    for name in ("latency_s",):
        v = raw.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise _Bad("bad_field", f"'{name}' must be a number")
    if raw.get("repaired") is not None and not isinstance(raw["repaired"], bool):
        raise _Bad("bad_field", "'repaired' must be a boolean")
    if failure is None:
        missing = [n for n in _REQUIRED if record.get(n if n in _TEXT else f"{n}_json") is None]
        if raw.get("answer") is None and value is None:
            missing.append("answer")
        if missing:
            raise _Bad("missing_field", f"missing {missing}")
    record.update(
        quizzer=quizzer or "external",
        failure_reason=failure,
        latency_s=raw.get("latency_s"),
        repaired=raw.get("repaired"),
    )
    kwargs = {k[: -len("_json")] if k.endswith("_json") else k: v for k, v in record.items()}
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    for key in ("question", "answer", "answer_type", "final_program"):
        kwargs.setdefault(key, "")
    kwargs.setdefault("seed", 0)
    kwargs.setdefault("index", 0)
    kwargs["latency_s"] = float(kwargs.get("latency_s") or 0.0)
    kwargs["repaired"] = bool(kwargs.get("repaired"))
    return QACandidate(**kwargs)


def _line(lineno: int, raw: Any) -> CandidateLine:
    rid = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else None
    try:
        return CandidateLine(lineno, _candidate(raw), id=rid)
    except _Bad as exc:
        return CandidateLine(lineno, error={"code": exc.code, "message": f"line {lineno}: {exc}"}, id=rid)
    except (ValueError, TypeError) as exc:  # the record's own validation (QACandidate)
        return CandidateLine(lineno, error={"code": "bad_field", "message": f"line {lineno}: {exc}"}, id=rid)


def read_candidate_lines(path: str | Path) -> list[CandidateLine]:
    """One :class:`CandidateLine` per non-blank line of the JSONL file at ``path`` (see the module
    docstring); :class:`CandidateFileError` when the file itself cannot be used."""
    out: list[CandidateLine] = []
    try:
        for lineno, raw, error in read_jsonl(path):
            out.append(CandidateLine(lineno, error=error) if error else _line(lineno, raw))
    except JsonlFileError as exc:
        raise CandidateFileError(exc.code, str(exc)) from None
    return out
