"""Scoring files of marked evidence against each other (what ``graphdojo rubric score`` runs).

Each JSONL line is one item: an ``id`` and its marked queries as ``queries`` (a list of query
strings), ``evidence`` (evidence items with a ``query``) or ``evidence_json`` (a candidate /
certified-dataset record); optionally ``answer`` and ``answer_type`` (then the answer metrics are
reported too). Gold and predicted items pair by ``id`` — or by line order when neither file
has ids. A line that is not such an item (strict JSON, :mod:`components.graph.jsonl`), an id
given twice in one file, a gold item without a prediction and a prediction without a gold item
each give an error row; nothing is skipped silently. A missing or empty file is a
:class:`~components.graph.jsonl.JsonlFileError`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.graph.jsonl import read_jsonl
from components.graph.schema import GraphSchema
from components.rubric.evidence import score_evidence
from components.rubric.metrics import answer_metrics

__all__ = ["MarkedItem", "read_marked", "score_files"]


@dataclass(frozen=True)
class MarkedItem:
    line: int
    id: str | None
    queries: tuple[str, ...]
    answer: Any = None
    answer_type: str | None = None


def _queries(obj: dict[str, Any]) -> list[str]:
    if "queries" in obj:
        raw = obj["queries"]
    elif "evidence" in obj:
        raw = obj["evidence"]
    elif "evidence_json" in obj:
        raw = json.loads(obj["evidence_json"]) if isinstance(obj["evidence_json"], str) else obj["evidence_json"]
    else:
        raise ValueError("expected 'queries', 'evidence' or 'evidence_json'")
    if not isinstance(raw, list):
        raise ValueError("the marked queries must be a list")
    out = []
    for item in raw:
        query = item.get("query") if isinstance(item, dict) else item
        if not isinstance(query, str):
            raise ValueError("every marked query must be a string (or an object with a string 'query')")
        out.append(query)
    return out


def read_marked(path: str | Path) -> list[MarkedItem | tuple[int, str]]:
    """Items, or ``(line, error)`` for lines that are not items."""
    out: list[MarkedItem | tuple[int, str]] = []
    ids: set[str] = set()
    for lineno, obj, error in read_jsonl(path):
        if error:
            out.append((lineno, error["message"]))
            continue
        try:
            if not isinstance(obj, dict):
                raise ValueError("expected a JSON object")
            ident = None if obj.get("id") is None else str(obj["id"])
            if ident is not None and ident in ids:
                raise ValueError(f"duplicate id {ident!r} (an item would be dropped)")
            if ident is not None:
                ids.add(ident)
            out.append(MarkedItem(lineno, ident, tuple(_queries(obj)), obj.get("answer"), obj.get("answer_type")))
        except ValueError as exc:
            out.append((lineno, f"line {lineno}: {exc}"))
    return out


def score_files(
    gold_path: str | Path, pred_path: str | Path, schema: GraphSchema | None = None
) -> Iterator[dict[str, Any]]:
    """One result dict per gold item (then one per unmatched prediction / bad line)."""
    gold, pred = read_marked(gold_path), read_marked(pred_path)
    for side, items in (("gold", gold), ("pred", pred)):
        for bad in (i for i in items if isinstance(i, tuple)):
            yield {"id": None, "ok": False, "code": "bad_input", "side": side, "message": bad[1]}
    g_items = [i for i in gold if isinstance(i, MarkedItem)]
    p_items = [i for i in pred if isinstance(i, MarkedItem)]
    by_id = any(i.id is not None for i in g_items + p_items)
    if by_id:
        preds = {i.id: i for i in p_items}
        pairs = [(g, preds.pop(g.id, None)) for g in g_items]
        leftovers = list(preds.values())
    else:
        pairs = [(g, p_items[k] if k < len(p_items) else None) for k, g in enumerate(g_items)]
        leftovers = p_items[len(g_items) :]
    for g, p in pairs:
        if p is None:
            yield {
                "id": g.id,
                "line": g.line,
                "ok": False,
                "code": "missing_prediction",
                "message": "no predicted item for this gold item",
            }
            continue
        out: dict[str, Any] = {"id": g.id, "ok": True, **score_evidence(g.queries, p.queries, schema).to_json()}
        if g.answer is not None and p.answer is not None:
            out["answer"] = answer_metrics(p.answer, g.answer, g.answer_type)
        yield out
    for p in leftovers:
        yield {
            "id": p.id,
            "line": p.line,
            "ok": False,
            "code": "no_gold",
            "message": "a predicted item without a gold item",
        }
