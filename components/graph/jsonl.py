"""Reading JSON and JSON-lines files that users hand in, without ever crashing on them.

Every JSONL input of the CLI and the pipeline (candidate records, query batches, marked
evidence for the rubric, evaluation and leakage question sets) is read through :func:`read_jsonl`:
one ``(line number, value, error)`` per non-blank line, the error a one-line message, never an
exception. The rules, the same everywhere:

* UTF-8 (a byte-order mark on the first line is allowed); a line longer than
  :data:`MAX_LINE_BYTES` is refused unread (read past in bounded chunks, never held whole);
* strict JSON: ``NaN`` / ``Infinity`` are refused, so is a **duplicate key** in an object (which
  value would be meant is ambiguous), and nesting deeper than :data:`MAX_DEPTH` (checked in
  linear time before parsing, so a hostile line cannot exhaust the parser's recursion);
* a file that does not exist, cannot be read, or holds no non-blank line is a
  :class:`JsonlFileError` with a code (``file_not_found``, ``file_unreadable``, ``empty_file``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, Final

__all__ = ["MAX_DEPTH", "MAX_LINE_BYTES", "JsonlFileError", "loads", "read_jsonl"]

MAX_LINE_BYTES: Final = 16 * 1024 * 1024
MAX_DEPTH: Final = 64


class JsonlFileError(Exception):
    """The file itself cannot be used; ``code`` is ``file_not_found``, ``file_unreadable`` or
    ``empty_file``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key[:60]!r}")
        out[key] = value
    return out


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _depth(text: str) -> int:
    """The deepest bracket nesting of ``text``, strings skipped (linear)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def loads(text: str | bytes) -> Any:
    """Strict JSON (see the module docstring); ``ValueError`` with a one-line reason otherwise."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if text.count("[") + text.count("{") > MAX_DEPTH and _depth(text) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} (column {exc.colno})") from None


def _lines(fh: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    lineno = 0
    while True:
        chunk = fh.readline(MAX_LINE_BYTES + 1)
        if not chunk:
            return
        lineno += 1
        if len(chunk) > MAX_LINE_BYTES and not chunk.endswith(b"\n"):
            while chunk and not chunk.endswith(b"\n"):
                chunk = fh.readline(1 << 20)
            yield lineno, None
            continue
        yield lineno, chunk


def read_jsonl(path: str | Path) -> Iterator[tuple[int, Any, dict[str, str] | None]]:
    """``(line, value, None)`` or ``(line, None, {"code", "message"})`` per non-blank line of
    ``path`` (codes ``line_too_long``, ``bad_json``; messages start with ``line N:``). Raises
    :class:`JsonlFileError` (at the first step, for a missing or unreadable file; at the end, for a
    file with no non-blank line)."""
    p = Path(path)
    try:
        fh = open(p, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise JsonlFileError("file_not_found", f"{p}: no such file") from None
    except OSError as exc:
        raise JsonlFileError("file_unreadable", f"{p}: {exc.strerror or exc}") from None
    seen = 0
    try:
        with fh:
            for lineno, data in _lines(fh):
                if data is None:
                    seen += 1
                    yield (
                        lineno,
                        None,
                        {"code": "line_too_long", "message": f"line {lineno}: longer than {MAX_LINE_BYTES} bytes"},
                    )
                    continue
                if lineno == 1 and data.startswith(b"\xef\xbb\xbf"):
                    data = data[3:]
                if not data.strip():
                    continue
                seen += 1
                try:
                    value = loads(data)
                except ValueError as exc:
                    yield lineno, None, {"code": "bad_json", "message": f"line {lineno}: {exc}"}
                    continue
                yield lineno, value, None
    except OSError as exc:
        raise JsonlFileError("file_unreadable", f"{p}: {exc.strerror or exc}") from None
    if not seen:
        raise JsonlFileError("empty_file", f"{p}: the file holds no JSON line")
