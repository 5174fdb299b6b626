"""Answers by type: one exact encoding, a lenient parser for text, and comparison.

Three things are kept apart on purpose:

* **the value** — the typed answer (``answer_value`` of a candidate): a ``str`` for an entity,
  ``int``/``float`` for a number, ``bool`` for a boolean, and for a set a list of JSON scalars in
  canonical order (:func:`canonical_answer`). It is authoritative and exact: ``"Paris"`` and
  ``"paris"`` are different members, so are ``1`` and ``"1"``; an empty string is a member.
  :func:`encode_answer` writes it as canonical JSON and :func:`decode_answer` reads that back:
  ``decode_answer(encode_answer(x, t), t) == canonical_answer(x, t)`` for every type (tested with
  hypothesis over members holding ``,`` ``;`` quotes, newlines, unicode, numbers-as-strings and
  empty strings).
* **the display** — :func:`~components.quizzer.candidate.format_answer` (``"a; b"``, ``"yes"``),
  for people. It is derived from the value and never parsed back while the value is present.
* **comparison** — :func:`normalise_answer` / :func:`answers_agree`: type-specific
  normalisation applied only when two answers are compared (text case-folded and
  whitespace-collapsed, numbers to 6 decimals, set members compared as normalised text).

:func:`parse_answer` is the lenient reader for text a program printed or a person typed: JSON
first, then the legacy forms (``yes``/``no``, ``1,204``, ``a; b`` / ``a, b`` for a set).
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = [
    "ANSWER_PARSERS",
    "ANSWER_TYPES",
    "AnswerParseError",
    "answers_agree",
    "canonical_answer",
    "decode_answer",
    "encode_answer",
    "normalise_answer",
    "normalise_member",
    "normalise_text",
    "parse_answer",
    "parse_printed",
]

ANSWER_TYPES: Final = ("entity", "boolean", "number", "set")


class AnswerParseError(ValueError):
    """A text or value is not an answer of the requested type."""


# -- the exact value ------------------------------------------------------------------------


def _number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AnswerParseError(f"not a number: {str(value)[:80]!r}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise AnswerParseError("not a finite number")
        if value.is_integer() and abs(value) < 2**63:
            return int(value)
    return value


def _member(value: Any) -> str | int | float | bool:
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return _number(value)
    raise AnswerParseError(f"a set member must be a string, number or boolean, not {type(value).__name__}")


def _member_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, str):
        return (1, value)
    return (0, value)


def canonical_answer(value: Any, answer_type: str) -> Any:
    """The exact canonical value of an answer that is already typed (see the module docstring):
    integral floats become ints; a set becomes its distinct members (identity by type and value)
    in a fixed order. Raises :class:`AnswerParseError` for a value of the wrong type, an empty
    entity or an empty set.

    >>> canonical_answer(["b", "a", "b", 1, "1"], "set")
    [1, '1', 'a', 'b']
    """
    if answer_type == "boolean":
        if not isinstance(value, bool):
            raise AnswerParseError(f"not a boolean: {str(value)[:80]!r}")
        return value
    if answer_type == "number":
        return _number(value)
    if answer_type == "entity":
        if not isinstance(value, str):
            raise AnswerParseError(f"an entity is a string, not {type(value).__name__}")
        if not value.strip():
            raise AnswerParseError("an empty entity")
        return value
    if answer_type == "set":
        if not isinstance(value, (list, tuple, set, frozenset)):
            raise AnswerParseError(f"a set answer is a list, not {type(value).__name__}")
        members: dict[str, Any] = {}
        for v in value:
            m = _member(v)
            members[json.dumps(m, ensure_ascii=False)] = m
        if not members:
            raise AnswerParseError("an empty set")
        return sorted(members.values(), key=_member_key)
    raise AnswerParseError(f"unknown answer type {answer_type!r}")


def encode_answer(value: Any, answer_type: str) -> str:
    """The canonical JSON text of an answer value (exact; see :func:`decode_answer`).

    >>> encode_answer(["Fun, but a little far fetched"], "set")
    '["Fun, but a little far fetched"]'
    """
    return json.dumps(canonical_answer(value, answer_type), ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def decode_answer(text: str, answer_type: str) -> Any:
    """Read :func:`encode_answer`'s output back (exactly)."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        raise AnswerParseError(f"not an encoded {answer_type} answer: {exc}") from None
    return canonical_answer(value, answer_type)


# -- the lenient reader for text -----------------------------------------------------------


def _literal(text: str) -> Any:
    for loader in (json.loads, ast.literal_eval):
        try:
            return loader(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return text


def _strip(text: str) -> str:
    return text.strip().strip("\"'` ").strip()


def _parse_boolean(text: Any) -> bool:
    if isinstance(text, bool):
        return text
    word = _strip(str(text)).rstrip(".!").lower()
    if word in {"yes", "true", "y"}:
        return True
    if word in {"no", "false", "n"}:
        return False
    raise AnswerParseError(f"not a yes/no answer: {str(text)[:80]!r}")


def _parse_number(text: Any) -> int | float:
    if isinstance(text, bool):
        raise AnswerParseError("a boolean is not a number")
    if isinstance(text, (int, float)):
        return _number(text)
    cleaned = _strip(str(text)).replace(",", "").rstrip(".")
    if not re.fullmatch(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?", cleaned):
        raise AnswerParseError(f"not a number: {str(text)[:80]!r}")
    return _number(float(cleaned))


def _parse_set(text: Any) -> list[Any]:
    if isinstance(text, (list, tuple, set, frozenset)):
        return canonical_answer([v for v in text if v is not None], "set")
    raw = str(text)
    if raw.strip().startswith(("[", "(", "{")):
        value = _literal(raw.strip())
        if isinstance(value, (list, tuple, set, frozenset)):
            return canonical_answer([v for v in value if v is not None], "set")
    items = [p.strip().strip("\"'") for p in (raw.split(";") if ";" in raw else raw.split(","))]
    return canonical_answer([p for p in items if p], "set")


def _parse_entity(text: Any) -> str:
    value = text
    if isinstance(value, str) and value.strip().startswith(("[", "(")):
        value = _literal(value.strip())
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise AnswerParseError(f"expected one entity, got {len(value)}")
        value = value[0]
    if value is None or isinstance(value, (dict, bool, list)):
        raise AnswerParseError(f"not an entity: {str(text)[:80]!r}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    out = _strip(str(value))
    if not out:
        raise AnswerParseError("an empty entity")
    return out


#: answer type -> lenient parser (text or already-typed value -> canonical value).
ANSWER_PARSERS: Final[Mapping[str, Callable[[Any], Any]]] = {
    "boolean": _parse_boolean,
    "number": _parse_number,
    "set": _parse_set,
    "entity": _parse_entity,
}


def parse_answer(text: Any, answer_type: str) -> Any:
    """Parse ``text`` (a string a program printed or a person typed, or a typed value) as
    ``answer_type``; JSON text is read as JSON. Set members of a JSON list are kept exactly.

    >>> parse_answer("Yes.", "boolean"), parse_answer("1,204", "number"), parse_answer("b; a", "set")
    (True, 1204, ['a', 'b'])
    >>> parse_answer('["Fun, but a little far fetched"]', "set")
    ['Fun, but a little far fetched']
    """
    parser = ANSWER_PARSERS.get(answer_type)
    if parser is None:
        raise AnswerParseError(f"unknown answer type {answer_type!r}")
    if isinstance(text, str) and answer_type != "set" and text.strip().startswith(("[", '"')):
        text = _literal(text.strip())
    return parser(text)


def parse_printed(line: str | None, answer_type: str) -> Any:
    """The answer a program printed (its last output line): JSON when it is JSON (``null`` is no
    answer), else text, then :func:`parse_answer`."""
    try:
        value = json.loads(line or "null")
    except (ValueError, RecursionError):
        value = line
    if value is None:
        raise AnswerParseError("the program printed no answer")
    return parse_answer(value, answer_type)


# -- comparison ----------------------------------------------------------------------------


def normalise_text(value: Any) -> str:
    """Case-folded, whitespace-collapsed text (what entity answers are compared by)."""
    return re.sub(r"\s+", " ", str(value)).strip().casefold()


def normalise_member(value: Any) -> str:
    """A set member (or a cell) as comparable text: numbers in one canonical form (``2001`` and
    ``"2001"``, ``2.0`` and ``"2"`` compare equal), text as :func:`normalise_text`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        v = _number(value) if not (isinstance(value, float) and not math.isfinite(value)) else value
        return str(v) if isinstance(v, int) else repr(round(v, 6))
    text = normalise_text(value)
    if re.fullmatch(r"[-+]?\d+(\.\d+)?", text):
        try:
            return normalise_member(_number(float(text)))
        except (AnswerParseError, OverflowError):
            return text
    return text


def normalise_answer(value: Any, answer_type: str) -> Any:
    """Comparable form: case-folded, whitespace-collapsed strings; numbers rounded to 6 digits;
    sets as sorted tuples of normalised members."""
    if answer_type == "number":
        return round(float(value), 6)
    if answer_type == "set":
        return tuple(sorted({normalise_member(v) for v in value}))
    if answer_type == "boolean":
        return bool(value)
    return normalise_text(value)


def answers_agree(a: Any, b: Any, answer_type: str) -> bool:
    """True when two typed answers are equal after normalisation (numbers within 1e-6 relative)."""
    na, nb = normalise_answer(a, answer_type), normalise_answer(b, answer_type)
    if answer_type == "number":
        return math.isclose(na, nb, rel_tol=1e-6, abs_tol=1e-6)
    return na == nb
