"""Answer metrics: SQuAD-normalised token F1 and exact match, raw exact match, ROUGE-L.

* :func:`normalize_answer` — SQuAD's normalisation: lower case, punctuation removed, the
  articles *a / an / the* removed, whitespace collapsed.
* :func:`token_f1` / :func:`exact_match` — over normalised tokens / strings (SQuAD v1.1).
* :func:`raw_exact_match` — what Graph-CoT's evaluation reports as EM: HuggingFace
  ``evaluate``'s ``exact_match`` with its defaults, i.e. the two strings equal as given (a
  missing prediction is ``""``).
* :func:`rouge_l` — ROUGE-L F-measure from ``rouge-score`` (no stemming, as Graph-CoT's
  ``evaluate.load("rouge")`` defaults).

``answer_type="set"`` compares set answers **as sets**: each side is split into members (a
list, or a string split on ``;`` / ``,`` / newlines), each member normalised; EM is set
equality and F1 the F1 of the two sets (ROUGE-L and raw EM stay string metrics, on the members
sorted and joined with ``"; "``).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache
from typing import Any, Final

__all__ = [
    "answer_metrics",
    "exact_match",
    "normalize_answer",
    "raw_exact_match",
    "rouge_l",
    "set_members",
    "token_f1",
]

_ARTICLES: Final = re.compile(r"\b(a|an|the)\b")
_PUNCT: Final = frozenset(string.punctuation)
_SET_SPLIT: Final = re.compile(r"[;\n]|,(?!\d{3}\b)")


def normalize_answer(text: Any) -> str:
    """SQuAD normalisation.

    >>> normalize_answer("The  Graph-CoT paper!")
    'graphcot paper'
    """
    s = "" if text is None else str(text).lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def set_members(value: Any) -> list[str]:
    """A set answer's members, normalised and de-duplicated (sorted).

    >>> set_members("Ann; Bob, the Carl")
    ['ann', 'bob', 'carl']
    """
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple, set, frozenset)) else _SET_SPLIT.split(str(value))
    return sorted({m for m in (normalize_answer(i) for i in items) if m})


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple, set, frozenset)):
        return "; ".join(sorted(str(v) for v in value))
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def exact_match(prediction: Any, gold: Any, answer_type: str | None = None) -> float:
    """1.0 when the normalised answers are equal (sets: equal as sets).

    >>> exact_match("the Eiffel Tower", "Eiffel tower"), exact_match("b; a", ["A", "B"], "set")
    (1.0, 1.0)
    """
    if answer_type == "set":
        return float(set_members(prediction) == set_members(gold))
    return float(normalize_answer(_text(prediction)) == normalize_answer(_text(gold)))


def token_f1(prediction: Any, gold: Any, answer_type: str | None = None) -> float:
    """SQuAD token F1 (sets: F1 of the member sets). Both empty: 1.0; one empty: 0.0.

    >>> round(token_f1("Ann and Bob", "Ann"), 3)
    0.5
    """
    if answer_type == "set":
        p, g = Counter(set_members(prediction)), Counter(set_members(gold))
    else:
        p = Counter(normalize_answer(_text(prediction)).split())
        g = Counter(normalize_answer(_text(gold)).split())
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
    """ROUGE-L F-measure (``rouge-score``).

    >>> round(rouge_l("graph neural networks", "neural networks"), 3)
    0.8
    """
    if answer_type == "set":
        pred, ref = "; ".join(set_members(prediction)), "; ".join(set_members(gold))
    else:
        pred, ref = _text(prediction), _text(gold)
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
