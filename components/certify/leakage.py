"""The leakage filter: drop a candidate if any grounded entity of its question, answer or
evidence appears in an evaluation question.

**Evaluation set** (:func:`load_eval_questions`): JSONL, one object per line with ``question``,
``answer`` and optional ``entities`` (grounded entity ids) and ``qid`` (default ``"line-<n>"``).

**Entities.** An entity is an ``(id, name)`` pair (either may be empty). The optional *lexicon*
maps entity names to ids (build one from a graph with :func:`build_lexicon`); it is used on both
sides to resolve names to ids.

*Grounded entities of an eval item*: its explicit ``entities`` ids, plus the lexicon ids whose
name or id occurs in its question/answer text. Its text is also kept, so candidate entity names
that are not in the lexicon can still be found in it.

*Grounded entities of a candidate*, by where:

* ``question`` — lexicon names/ids occurring in the question text, and the start node when its
  name or id occurs in the question;
* ``answer`` — lexicon names/ids occurring in the answer text, and, for ``entity`` / ``set``
  answers, each answer value (a string) as a name;
* ``evidence`` — the start node; string parameter values of evidence queries; evidence row cells
  (strings, also inside lists) that are a lexicon name or id (without a lexicon, only the start
  node and parameters count, since arbitrary property values are not entities).

**Match rule.** A candidate entity appears in an eval item when its id (case-insensitive) is one
of the item's grounded ids, or its name resolves through the lexicon to one of them, or its name
or id occurs in the item's question/answer text. Text occurrence is case-insensitive and
whole-word: the match may not be preceded or followed by a letter, digit or underscore ("Ann"
does not match "Anne"). Names shorter than ``min_name_chars`` (default 3) and purely numeric
strings are never matched as text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from components.graph.jsonl import JsonlFileError, read_jsonl

__all__ = [
    "LEAKAGE_WHERE",
    "EvalItem",
    "LeakageFilter",
    "LeakageResult",
    "build_lexicon",
    "load_eval_questions",
]

LEAKAGE_WHERE: Final = ("question", "answer", "evidence")


@dataclass(frozen=True)
class EvalItem:
    qid: str
    question: str
    answer: str = ""
    entities: tuple[str, ...] = ()


def load_eval_questions(path: Path | str) -> list[EvalItem]:
    """Read an evaluation set (see the module docstring); blank lines are skipped, a malformed
    line raises ``ValueError`` naming the file and line."""
    items = []
    try:
        lines = list(read_jsonl(path))
    except JsonlFileError as exc:
        raise ValueError(str(exc)) from None
    for n, obj, error in lines:
        if error:
            raise ValueError(f"{path}: {error['message']}")
        try:
            if not isinstance(obj, dict) or not isinstance(obj.get("question"), str):
                raise ValueError("each line must be an object with a string 'question'")  # noqa: TRY004 - a data error
            ents = obj.get("entities") or []
            if not isinstance(ents, list):
                raise ValueError("'entities' must be a list of ids")  # noqa: TRY004 - a data error
            items.append(
                EvalItem(
                    str(obj.get("qid") or f"line-{n}"),
                    obj["question"],
                    "" if obj.get("answer") is None else _text(obj["answer"]),
                    tuple(str(e) for e in ents),
                )
            )
        except ValueError as exc:
            raise ValueError(f"{path}:{n}: {exc}") from exc
    return items


def build_lexicon(
    query_path: Any, schema: Any, *, name_props: Sequence[str] = ("name", "title"), limit: int = 1_000_000
) -> dict[str, str]:
    """``name -> id`` for every node whose label has one of ``name_props`` (first found), read
    through a read-only query path (``query_path.run``) using each label's primary key."""
    out: dict[str, str] = {}
    for label, node in schema.labels.items():
        prop = next((p for p in name_props if p in node.properties), None)
        if prop is None:
            continue
        q = f"MATCH (n:`{label}`) WHERE n.`{prop}` IS NOT NULL RETURN n.`{node.primary_key}` AS id, n.`{prop}` AS name"
        for row in query_path.run(q, limit=limit).rows:
            if row[0] is not None and isinstance(row[1], str) and row[1].strip():
                out.setdefault(row[1], str(row[0]))
    return out


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "; ".join(_text(v) for v in value)
    return "" if value is None else str(value)


@dataclass
class LeakageResult:
    dropped: bool
    matches: list[tuple[str, str, str]] = field(default_factory=list)  # (entity, eval qid, where)

    def to_json(self) -> dict[str, Any]:
        return {"dropped": self.dropped, "matches": [{"entity": e, "qid": q, "where": w} for e, q, w in self.matches]}


class LeakageFilter:
    """Drops candidates that share a grounded entity with an evaluation item (module docstring)."""

    def __init__(
        self,
        eval_items: Iterable[EvalItem | Mapping[str, Any]],
        *,
        lexicon: Mapping[str, str] | None = None,
        min_name_chars: int = 3,
    ) -> None:
        self.min_name_chars = min_name_chars
        self.items: list[EvalItem] = [
            i
            if isinstance(i, EvalItem)
            else EvalItem(
                str(i.get("qid") or f"item-{k}"),
                str(i.get("question", "")),
                _text(i.get("answer")),
                tuple(str(e) for e in i.get("entities") or []),
            )
            for k, i in enumerate(eval_items)
        ]
        self._name_to_id = {k.casefold(): str(v).casefold() for k, v in (lexicon or {}).items() if self._matchable(k)}
        self._ids = set(self._name_to_id.values())
        # first word of each lexicon name / id -> those strings (a text only checks the names
        # whose first word it contains); strings that start with no word go to ``_loose``
        self._first: dict[str, list[tuple[str, bool]]] = {}
        self._loose: list[tuple[str, bool]] = []
        for s, is_name in [(n, True) for n in self._name_to_id] + [(i, False) for i in self._ids if self._matchable(i)]:
            m = re.match(r"\w+", s)
            (self._first.setdefault(m.group(), []) if m else self._loose).append((s, is_name))
        self._texts = [f"{i.question}\n{i.answer}".casefold() for i in self.items]
        self._cache: dict[str, tuple[str, ...]] = {}
        # eval item grounded ids: explicit + lexicon names/ids found in its text
        self._by_id: dict[str, set[str]] = {}
        for item, text in zip(self.items, self._texts, strict=True):
            grounded = {e.casefold() for e in item.entities}
            grounded |= {self._name_to_id[n] for n in self._lexicon_names_in(text)}
            grounded |= {i for i in self._lexicon_ids_in(text)}
            for g in grounded:
                self._by_id.setdefault(g, set()).add(item.qid)

    # -- text matching -------------------------------------------------------------------------

    def _matchable(self, s: Any) -> bool:
        return isinstance(s, str) and len(s.strip()) >= self.min_name_chars and not re.fullmatch(r"[\d\s.,+\-]+", s)

    @staticmethod
    def _occurs(needle: str, haystack: str) -> bool:
        return re.search(r"(?<!\w)" + re.escape(needle) + r"(?!\w)", haystack) is not None

    def _lexicon_in(self, text: str) -> list[tuple[str, bool]]:
        """Lexicon ``(string, is_name)`` occurring in ``text`` (case-folded) as whole words."""
        pool = [x for w in dict.fromkeys(re.findall(r"\w+", text)) for x in self._first.get(w, ())]
        return [(s, is_name) for s, is_name in pool + self._loose if s in text and self._occurs(s, text)]

    def _lexicon_names_in(self, text: str) -> list[str]:
        return [s for s, is_name in self._lexicon_in(text) if is_name]

    def _lexicon_ids_in(self, text: str) -> list[str]:
        return [s for s, is_name in self._lexicon_in(text) if not is_name]

    def _qids_with_text(self, s: str) -> tuple[str, ...]:
        """Eval qids whose text contains ``s`` (case-folded) as a whole word."""
        if s not in self._cache:
            self._cache[s] = (
                tuple(
                    item.qid
                    for item, text in zip(self.items, self._texts, strict=True)
                    if s in text and self._occurs(s, text)
                )
                if self._matchable(s)
                else ()
            )
        return self._cache[s]

    def _eval_hits(self, entity_id: str, name: str) -> set[str]:
        eid, nm = entity_id.casefold(), name.casefold()
        hits: set[str] = set()
        for key in (eid, self._name_to_id.get(nm, "")):
            if key:
                hits |= self._by_id.get(key, set())
                hits.update(self._qids_with_text(key))
        if nm:
            hits.update(self._qids_with_text(nm))
        return hits

    # -- candidate entities --------------------------------------------------------------------

    def _entities_in_text(self, text: str) -> list[tuple[str, str]]:
        t = text.casefold()
        return [(self._name_to_id[n], n) for n in self._lexicon_names_in(t)] + [
            (i, "") for i in self._lexicon_ids_in(t)
        ]

    def _is_lexicon_value(self, s: str) -> bool:
        f = s.casefold()
        return f in self._name_to_id or f in self._ids

    def _candidate_entities(self, c: Any) -> list[tuple[str, str, str]]:
        """``(id, name, where)`` for every grounded entity of candidate ``c``."""
        out: list[tuple[str, str, str]] = []
        start = getattr(c, "start_node", None) or {}
        sid, sname = str(start.get("id") or ""), str(start.get("name") or "")
        question = str(getattr(c, "question", "") or "")
        out += [(i, n, "question") for i, n in self._entities_in_text(question)]
        q = question.casefold()
        if (sname and self._matchable(sname) and self._occurs(sname.casefold(), q)) or (
            sid and self._matchable(sid) and self._occurs(sid.casefold(), q)
        ):
            out.append((sid, sname, "question"))
        answer = str(getattr(c, "answer", "") or "")
        out += [(i, n, "answer") for i, n in self._entities_in_text(answer)]
        if getattr(c, "answer_type", "") in ("entity", "set"):
            value = getattr(c, "answer_value", None)
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(v, str):
                    out.append(("", v, "answer"))
        if sid or sname:
            out.append((sid, sname, "evidence"))
        for ev in getattr(c, "evidence", None) or []:
            if not isinstance(ev, dict):
                continue
            for v in (ev.get("params") or {}).values():
                if isinstance(v, str):
                    out.append((v, v, "evidence"))
            if self._name_to_id:
                for row in ev.get("rows") or []:
                    for cell in row if isinstance(row, (list, tuple)) else [row]:
                        for v in cell if isinstance(cell, (list, tuple)) else [cell]:
                            if isinstance(v, str) and self._is_lexicon_value(v):
                                out.append((v, v, "evidence"))
        return out

    # -- public API ----------------------------------------------------------------------------

    def check(self, candidate: Any) -> LeakageResult:
        matches: list[tuple[str, str, str]] = []
        seen = set()
        for eid, name, where in self._candidate_entities(candidate):
            for qid in sorted(self._eval_hits(eid, name)):
                key = (name or eid, qid, where)
                if key not in seen:
                    seen.add(key)
                    matches.append(key)
        return LeakageResult(bool(matches), matches)

    def filter(self, candidates: Iterable[Any]) -> tuple[list[Any], list[tuple[Any, LeakageResult]], dict[str, Any]]:
        """``(kept, dropped as (candidate, result), report)``. ``report["by_where"]`` counts the
        dropped candidates with at least one match in each place (a candidate may count in
        several); ``report["by_eval"]`` counts dropped candidates per eval qid."""
        kept, dropped = [], []
        by_where: Counter[str] = Counter({w: 0 for w in LEAKAGE_WHERE})
        by_eval: Counter[str] = Counter()
        total = 0
        for c in candidates:
            total += 1
            res = self.check(c)
            if not res.dropped:
                kept.append(c)
                continue
            dropped.append((c, res))
            by_where.update({w for _, _, w in res.matches})
            by_eval.update({q for _, q, _ in res.matches})
        report = {
            "candidates": total,
            "kept": len(kept),
            "dropped": len(dropped),
            "eval_items": len(self.items),
            "by_where": dict(by_where),
            "by_eval": dict(by_eval.most_common()),
        }
        return kept, dropped, report
