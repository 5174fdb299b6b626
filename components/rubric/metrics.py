"""Answer metrics: answers **scored by type** (the one scoring function of evaluation, rewards and
the judges' inputs), plus raw exact match and ROUGE-L.

:func:`typed_answer` reads a prediction or a gold answer as the answer type asks, and
:func:`answers_equal` / :func:`exact_match` / :func:`token_f1` compare the typed values:

* **boolean** — ``yes`` / ``no`` / ``true`` / ``false`` / ``y`` / ``n`` and Python / JSON
  booleans, in any case, with trailing punctuation, or as the first word of a sentence
  ("Yes, she did."). ``"true"`` equals ``"yes"``.
* **number** — parsed as a number, never as text: the answer must hold exactly one number (``12``,
  ``-3``, ``3.5``, ``1,204``, ``1.2e3``, ``"12 papers"``); a sign and a decimal point are never
  dropped (``"3.5"`` ≠ ``"35"``, ``"-3"`` ≠ ``"3"``). An integral gold number (``12``, ``12.0``)
  needs a prediction exactly equal to it (``"12.0"`` = ``"12"``, ``"12.01"`` ≠ ``"12"``); a non-integral gold number
  is matched within a relative tolerance of :data:`FLOAT_REL_TOL` (0.1 %) or when the prediction
  rounded to the gold's decimals equals it (``3.4567`` = ``3.46``).
* **set** — a set of normalised members: a JSON (or Python) list, else the text split on ``;``
  / newlines when it has one, else on ``,`` (not a thousands separator);
  each member normalised as an entity, a member that is a number as a number (``2019.0`` =
  ``2019``); EM is set equality, F1 the F1 of the two member sets.
* **entity** — SQuAD normalisation (:func:`normalize_answer`: lower case, punctuation and the
  articles *a / an / the* removed, whitespace collapsed); a one-member list is that member.

The type comes from the gold answer's ``answer_type`` (the question's), else is inferred from the
gold value (:func:`infer_answer_type`). A prediction that cannot be read as the type (``"maybe"``
for a yes/no question, two numbers for a count) scores 0. Booleans and numbers have no partial
credit (F1 = EM); entities get SQuAD token F1.

Where this differs from certification: the certifier's check 4
(:func:`components.quizzer.answers.answers_agree`) compares a program's printed value with the
submitted one exactly by type (numbers to 6 decimals, members case-folded) — it certifies data,
so it stays strict; scoring forgives what a reader would (``"True"`` for "yes", ``"12 papers"``).

* :func:`raw_exact_match` — what Graph-CoT's evaluation reports as EM: the strings as given.
* :func:`rouge_l` — ROUGE-L F-measure from ``rouge-score`` (no stemming), on the canonical texts.
"""

from __future__ import annotations

import ast
import json
import math
import re
import string
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

__all__ = [
    "ANSWER_KINDS",
    "FLOAT_REL_TOL",
    "TypedAnswer",
    "answer_metrics",
    "answers_equal",
    "canonical_text",
    "exact_match",
    "infer_answer_type",
    "normalize_answer",
    "raw_exact_match",
    "rouge_l",
    "set_members",
    "split_set",
    "token_f1",
    "typed_answer",
]

ANSWER_KINDS: Final = ("boolean", "number", "set", "entity")
#: relative tolerance for a non-integral gold number (module docstring)
FLOAT_REL_TOL: Final = 0.001

_ARTICLES: Final = re.compile(r"\b(a|an|the)\b")
_PUNCT: Final = frozenset(string.punctuation)
_TRUE: Final = frozenset({"yes", "true", "y"})
_FALSE: Final = frozenset({"no", "false", "n"})
_FIRST_WORD: Final = re.compile(r"^\W*([A-Za-z]+)\b")
# a number token: optional sign, digits with optional thousands groups, optional fraction and exponent;
# not glued to letters or other digits ("B12", "1.2.3" are not numbers)
_NUMBER: Final = re.compile(
    r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w]|\.\d)|(?<![\w.])[-+]?\.\d+(?![\w])"
)
_WHOLE_NUMBER: Final = re.compile(r"\s*[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?\s*|\s*[-+]?\.\d+\s*")
_SET_SPLIT_STRONG: Final = re.compile(r"[;\n]")
_SET_SPLIT_COMMA: Final = re.compile(r",(?!\d{3}\b)")


def normalize_answer(text: Any) -> str:
    """SQuAD normalisation (for entities and entity members).

    >>> normalize_answer("The  Graph-CoT paper!")
    'graphcot paper'
    """
    s = "" if text is None else str(text).lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


@dataclass(frozen=True)
class TypedAnswer:
    """An answer read as ``kind``; ``value`` ``None`` when it cannot be read as that kind.

    ``value`` is a ``bool`` (boolean), a ``float`` (number), a ``frozenset`` of normalised member
    keys (set) or a normalised string (entity)."""

    kind: str
    value: Any
    decimals: int = 0  # numbers: the digits after the decimal point as written

    @property
    def ok(self) -> bool:
        return self.value is not None


def _literal(text: str) -> Any:
    for loader in (json.loads, ast.literal_eval):
        try:
            return loader(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


def _as_list(value: Any) -> list[Any] | None:
    """``value`` as a list when it is one, or a string holding a JSON / Python list."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return list(value)
    if isinstance(value, str) and value.strip()[:1] in ("[", "("):
        parsed = _literal(value.strip())
        if isinstance(parsed, (list, tuple, set, frozenset)):
            return list(parsed)
    return None


def _boolean(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    items = _as_list(value)
    if items is not None:
        return _boolean(items[0]) if len(items) == 1 else None
    text = str(value).strip().strip("\"'`").strip().lower()
    word = text.rstrip(".!")
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    m = _FIRST_WORD.match(text)
    if m and m.group(1).lower() in {"yes", "true"}:
        return True
    if m and m.group(1).lower() in {"no", "false"}:
        return False
    return None


def _decimals(token: str) -> int:
    mantissa = token.lower().split("e")[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


def _number(value: Any) -> tuple[float, int] | None:
    """``(value, decimals)`` of the one number in ``value``, or ``None``."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        x = float(value)
        return (x, 0 if x.is_integer() else len(repr(x).split(".")[-1])) if math.isfinite(x) else None
    items = _as_list(value)
    if items is not None:
        return _number(items[0]) if len(items) == 1 else None
    text = str(value)
    tokens = _NUMBER.findall(text)
    if len(tokens) != 1:
        return None
    token = tokens[0]
    try:
        x = float(token.replace(",", ""))
    except ValueError:
        return None
    return (x, _decimals(token)) if math.isfinite(x) else None


def _member_key(value: Any) -> str:
    """A set member's comparison key: a whole number as a number, anything else as an entity."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)) or (isinstance(value, str) and _WHOLE_NUMBER.fullmatch(value)):
        n = _number(value)
        if n is not None:
            return f"#{n[0]:.6g}" if not n[0].is_integer() else f"#{int(n[0])}"
    return normalize_answer(value)


def split_set(value: Any) -> list[str]:
    """A set answer's members as written (stripped, unnormalised), by the separators of the
    module docstring.

    >>> split_set("Ann; Bob, the Carl"), split_set('["x", 2]')
    (['Ann', 'Bob, the Carl'], ['x', '2'])
    """
    if value is None:
        return []
    items = _as_list(value)
    if items is None:
        text = str(value)
        splitter = _SET_SPLIT_STRONG if _SET_SPLIT_STRONG.search(text) else _SET_SPLIT_COMMA
        items = splitter.split(text)
    return [t for t in (_text(i) for i in items if i is not None) if t]


def set_members(value: Any) -> list[str]:
    """A set answer's member keys, normalised and de-duplicated (sorted).

    >>> set_members("Ann; Bob, the Carl"), set_members('["2019", 2019.0, "Ann"]')
    (['ann', 'bob carl'], ['#2019', 'ann'])
    >>> set_members("Ann, Bob, Carl")
    ['ann', 'bob', 'carl']
    """
    if value is None:
        return []
    items = _as_list(value)
    if items is None:
        items = split_set(value)
    return sorted({k for k in (_member_key(i) for i in items if i is not None) if k})


def infer_answer_type(gold: Any) -> str:
    """The answer type a gold value implies: a list → set; a Python boolean or ``yes`` / ``no`` /
    ``true`` / ``false`` → boolean; a number or a text that is one number → number; else entity.

    >>> [infer_answer_type(x) for x in (["a", "b"], "yes", True, "12.0", "-3", "Ann Lee")]
    ['set', 'boolean', 'boolean', 'number', 'number', 'entity']
    """
    if isinstance(gold, (list, tuple, set, frozenset)):
        return "set"
    if isinstance(gold, bool):
        return "boolean"
    if isinstance(gold, (int, float)):
        return "number"
    text = "" if gold is None else str(gold).strip()
    if text.lower().rstrip(".") in _TRUE | _FALSE - {"y", "n"}:
        return "boolean"
    if _WHOLE_NUMBER.fullmatch(text):
        return "number"
    return "entity"


def _kind(gold: Any, answer_type: str | None) -> str:
    return answer_type if answer_type in ANSWER_KINDS else infer_answer_type(gold)


def typed_answer(value: Any, answer_type: str | None = None) -> TypedAnswer:
    """``value`` read as ``answer_type`` (inferred from ``value`` when ``None``).

    >>> typed_answer("Yes, she did.", "boolean").value, typed_answer("12 papers", "number").value
    (True, 12.0)
    >>> typed_answer("3 or 4", "number").ok
    False
    """
    kind = _kind(value, answer_type)
    if value is None:
        return TypedAnswer(kind, None)
    if kind == "boolean":
        return TypedAnswer(kind, _boolean(value))
    if kind == "number":
        n = _number(value)
        return TypedAnswer(kind, None) if n is None else TypedAnswer(kind, n[0], n[1])
    if kind == "set":
        members = set_members(value)
        return TypedAnswer(kind, frozenset(members) if members else None)
    items = _as_list(value)
    if items is not None:
        if len(items) != 1:
            return TypedAnswer(kind, None)
        value = items[0]
    text = normalize_answer(_text(value))
    return TypedAnswer(kind, text or None)


def _numbers_equal(pred: TypedAnswer, gold: TypedAnswer) -> bool:
    p, g = float(pred.value), float(gold.value)
    if g.is_integer():
        return p == g
    if math.isclose(p, g, rel_tol=FLOAT_REL_TOL, abs_tol=0.0):
        return True
    return round(p, gold.decimals) == round(g, gold.decimals)


def answers_equal(prediction: Any, gold: Any, answer_type: str | None = None) -> bool:
    """The typed comparison of the module docstring.

    >>> answers_equal("true", "yes", "boolean"), answers_equal("12.0", "12", "number")
    (True, True)
    >>> answers_equal("3.5", "35", "number"), answers_equal("-3", "3", "number")
    (False, False)
    """
    kind = _kind(gold, answer_type)
    g = typed_answer(gold, kind)
    p = typed_answer(prediction, kind)
    if not (p.ok and g.ok):
        return False
    if kind == "number":
        return _numbers_equal(p, g)
    return bool(p.value == g.value)


def canonical_text(value: Any, answer_type: str | None = None) -> str:
    """An answer as one comparable text (what judges and string metrics see): ``yes`` / ``no``,
    a number without a needless ``.0``, set members sorted and joined with ``"; "``, an entity
    as given (stripped); an answer unreadable as its type stays its text.

    >>> canonical_text(True), canonical_text("12.0", "number"), canonical_text(["b", "a"])
    ('yes', '12', 'a; b')
    """
    kind = _kind(value, answer_type)
    t = typed_answer(value, kind)
    if value is None:
        return ""
    if kind == "boolean" and t.ok:
        return "yes" if t.value else "no"
    if kind == "number" and t.ok:
        x = float(t.value)
        return str(int(x)) if x.is_integer() else repr(x)
    items = _as_list(value)
    if kind == "set" and items is not None:
        return "; ".join(sorted(_text(v) for v in items if v is not None))
    if kind == "entity" and items is not None and len(items) == 1:
        return _text(items[0])
    return _text(value)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple, set, frozenset)):
        return "; ".join(sorted(str(v) for v in value))
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value).strip()


def exact_match(prediction: Any, gold: Any, answer_type: str | None = None) -> float:
    """1.0 when the typed answers are equal (:func:`answers_equal`).

    >>> exact_match("the Eiffel Tower", "Eiffel tower"), exact_match("b; a", ["A", "B"], "set")
    (1.0, 1.0)
    """
    return float(answers_equal(prediction, gold, answer_type))


def token_f1(prediction: Any, gold: Any, answer_type: str | None = None) -> float:
    """Entities: SQuAD token F1; sets: F1 of the member sets; booleans and numbers: EM. Both
    empty: 1.0; one empty: 0.0.

    >>> round(token_f1("Ann and Bob", "Ann"), 3), token_f1("13", "12", "number")
    (0.5, 0.0)
    """
    kind = _kind(gold, answer_type)
    if kind in ("boolean", "number"):
        if prediction is None or not str(_text(prediction)).strip():
            return 1.0 if gold is None or not _text(gold) else 0.0
        return exact_match(prediction, gold, kind)
    if kind == "set":
        p, g = Counter(set_members(prediction)), Counter(set_members(gold))
    else:
        p = Counter((typed_answer(prediction, "entity").value or "").split())
        g = Counter((typed_answer(gold, "entity").value or "").split())
    if not p and not g:
        return 1.0
    common = sum((p & g).values())
    if common == 0:
        return 0.0
    precision, recall = common / sum(p.values()), common / sum(g.values())
    return 2 * precision * recall / (precision + recall)


def raw_exact_match(prediction: Any, gold: Any) -> float:
    """Graph-CoT's EM: the strings as given (``None`` → ``""``), no normalisation.

    >>> raw_exact_match("Paris", "paris")
    0.0
    """
    return float(_text(prediction) == _text(gold))


@lru_cache(maxsize=1)
def _scorer() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def rouge_l(prediction: Any, gold: Any, answer_type: str | None = None) -> float:
    """ROUGE-L F-measure (``rouge-score``) of the canonical texts (:func:`canonical_text`).

    >>> round(rouge_l("graph neural networks", "neural networks"), 3)
    0.8
    """
    kind = _kind(gold, answer_type)
    if kind == "set":
        pred, ref = "; ".join(set_members(prediction)), "; ".join(set_members(gold))
    else:
        pred, ref = canonical_text(prediction, kind), canonical_text(gold, kind)
    if not pred.strip() and not ref.strip():
        return 1.0
    return float(_scorer().score(ref, pred)["rougeL"].fmeasure)


def answer_metrics(prediction: Any, gold: Any, answer_type: str | None = None) -> dict[str, float]:
    """All four metrics for one answer."""
    return {
        "f1": token_f1(prediction, gold, answer_type),
        "em": exact_match(prediction, gold, answer_type),
        "raw_em": raw_exact_match(prediction, gold),
        "rouge_l": rouge_l(prediction, gold, answer_type),
    }
