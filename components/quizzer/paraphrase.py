"""Natural questions: a model rewrites each template question into fluent English, and a
deterministic check keeps the rewrite only when it says the same thing.

Template questions are correct but stilted ("Which are the papers that the author "X" wrote?").
:func:`paraphrase_candidates` asks the Quizzer's model (one batched, greedy call) for one fluent
rewrite per question; :func:`check_paraphrase` then compares it with the original:

* **entities** — every quoted name of the original appears verbatim, and no other quoted text;
* **numbers** — every number outside the quotes is still there;
* **modifiers** — every modifier of the original (most / fewest, highest / lowest, largest /
  smallest, more / fewer, before / after, at least / at most, not, both, other than, …) is kept
  (or said with a listed synonym), none of their opposites appears, a negation is neither
  dropped nor added, and no superlative, comparative, order or bound word is added that the
  original does not imply ("most", "more", "only", "recent", …);
* **answer scope** — a yes/no question stays a yes/no question, a "how many" question a counting
  one, a list question asks for several things and a single-answer question for one;
* **form** — one line ending with a question mark, neither empty nor far longer than the original.

An accepted rewrite replaces the candidate's ``question``; the template text stays in
``meta["template_question"]`` and the outcome in ``meta["paraphrase"]`` (``accepted`` or
``rejected`` with its reason and the rejected text), so both texts are stored and every rejected
rewrite is counted. The check does not compare the relation a question names ("wrote" vs
"cited"): a rewrite that swaps it keeps its entities, numbers and modifiers and passes — the
semantic judge, when on, is what looks at that. Certification never reads the question text, so a paraphrase changes no
certificate; the leakage filter sees the same quoted entities.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from components.llm.base import GenerationBackend, SamplingParams

__all__ = ["PARAPHRASE_REASONS", "ParaphraseConfig", "check_paraphrase", "paraphrase_candidates", "question_scope"]

PARAPHRASE_REASONS: Final = {
    "empty": "the model wrote no question",
    "entities": "a quoted name is missing, changed or added",
    "numbers": "a number is missing",
    "modifiers": "a modifier is missing or turned around",
    "scope": "the kind of answer asked for changed (yes/no, count, one vs several)",
    "form": "not one question ending with '?', or far too long",
    "unchanged": "the rewrite is the template text itself",
}

#: modifier → words that keep it (itself first)
_KEEP: Final = {
    "most": ("most", "largest number", "greatest number", "highest number"),
    "fewest": ("fewest", "least", "smallest number", "lowest number"),
    "highest": ("highest", "largest", "greatest", "maximum", "top"),
    "lowest": ("lowest", "smallest", "minimum", "least"),
    "largest": ("largest", "highest", "greatest", "biggest", "maximum"),
    "smallest": ("smallest", "lowest", "least", "minimum"),
    "more": ("more", "greater", "larger", "higher"),
    "fewer": ("fewer", "less", "smaller", "lower"),
    "higher": ("higher", "greater", "larger", "later", "more recent"),
    "lower": ("lower", "smaller", "earlier", "less"),
    "before": ("before", "earlier than", "prior to"),
    "after": ("after", "later than", "since"),
    "at least": ("at least", "or more", "minimum of"),
    "at most": ("at most", "or fewer", "or less", "no more than", "maximum of", "up to", "within"),
    "not": ("not", "n't", "excluding", "except", "other than", "apart from", "besides"),
    "other than": ("other than", "excluding", "except", "besides", "apart from", "not counting"),
    "both": ("both", " and also ", "as well as", "in common", "shared"),
    "any": ("any", "at least one", "some", "one or more"),
    "ignoring direction": ("ignoring direction", "in either direction", "regardless of direction", "undirected"),
    "absolute difference": ("absolute difference", "difference"),
}
_OPPOSITE: Final = {
    "most": ("fewest", "least"),
    "fewest": ("most",),
    "highest": ("lowest", "smallest", "minimum"),
    "lowest": ("highest", "largest", "maximum"),
    "largest": ("smallest", "lowest", "minimum"),
    "smallest": ("largest", "highest", "maximum"),
    "more": ("fewer", "less"),
    "fewer": ("more", "greater"),
    "higher": ("lower", "earlier", "smaller"),
    "lower": ("higher", "later", "larger"),
    "before": ("after", "later than", "since"),
    "after": ("before", "earlier than", "prior to"),
    "at least": ("at most", "no more than", "or fewer"),
    "at most": ("at least", "or more"),
}
_QUOTED: Final = re.compile(r'"([^"]*)"')
_NEGATION: Final = re.compile(r"n't\b|\b(not|never|no|none|neither|nor|except|excluding|without)\b")
#: words that change a question's meaning when a rewrite adds them (superlatives, comparatives,
#: order, bounds, exclusivity); a word the original already implies (one of its modifiers' keep
#: words) may appear
_ADDED: Final = (
    "most", "fewest", "least", "highest", "lowest", "largest", "smallest", "greatest", "biggest",
    "maximum", "minimum", "top", "more", "fewer", "less", "before", "after", "earlier", "later",
    "at least", "at most", "only", "first", "last", "latest", "recent",
)  # fmt: skip
_YES_NO: Final = re.compile(r"(^|[,;:]\s*)(is|are|does|do|did|has|have|was|were|can|could)\b", re.I)
_COUNT: Final = re.compile(r"\b(how many|number of|count)\b", re.I)
_MANY: Final = re.compile(r"\b(which are|list|what are|all the|all of the|name all|every)\b", re.I)

_PROMPT: Final = """Rewrite this question about a graph as one fluent, natural English question.
Keep every name in double quotes exactly as written, in double quotes. Keep every number. Keep the exact meaning: the same entities, the same conditions (most/fewest, highest/lowest, more/fewer, before/after, at least/at most, not, both), and the same kind of answer (yes/no, a count, one item or several items).
Reply with the rewritten question only.

Question: {question}"""


@dataclass(frozen=True)
class ParaphraseConfig:
    max_new_tokens: int = 96
    max_length_ratio: float = 2.0  # a rewrite longer than this × the original is refused


def _unquoted(text: str) -> str:
    return _QUOTED.sub(" ", text).lower()


def _has(text: str, words: Sequence[str]) -> bool:
    return any(re.search(rf"(?<![a-z]){re.escape(w.strip())}(?![a-z])", text) for w in words)


_ONE: Final = re.compile(r"\b(which one|one of|a single|which single)\b", re.I)


def question_scope(question: str) -> str:
    """What kind of answer a question asks for, from its wording: ``yes_no``, ``count``,
    ``several``, ``one`` (explicitly a single item) or ``open`` (which / what …)."""
    bare = _unquoted(question)
    if _YES_NO.search(question.strip()):
        return "yes_no"
    if _COUNT.search(bare) and not bare.strip().startswith(("which", "what is the name", "who")):
        return "count"
    if _MANY.search(bare):
        return "several"
    if _ONE.search(bare):
        return "one"
    return "open"


def _same_scope(original: str, rewrite: str, answer_type: str | None) -> bool:
    before, after = question_scope(original), question_scope(rewrite)
    if "yes_no" in (before, after) or "count" in (before, after):
        return before == after
    if answer_type == "set":  # several items: never narrowed to one
        return after != "one" or before == "one"
    return after != "several" or before == "several"  # one item: never widened to a list


def check_paraphrase(
    original: str, rewrite: str, answer_type: str | None = None, *, max_length_ratio: float = 2.0
) -> str | None:
    """``None`` when ``rewrite`` keeps the meaning of ``original`` (module docstring), else the
    first failing reason (a key of :data:`PARAPHRASE_REASONS`)."""
    text = (rewrite or "").strip().strip("`").strip()
    if not text:
        return "empty"
    if "\n" in text or not text.endswith("?") or len(text) > max(80, max_length_ratio * len(original)):
        return "form"
    if " ".join(text.split()) == " ".join(original.split()):
        return "unchanged"
    if Counter(_QUOTED.findall(original)) != Counter(_QUOTED.findall(text)):
        return "entities"
    bare_orig, bare_new = _unquoted(original), _unquoted(text)
    if not set(re.findall(r"\b\d+\b", bare_orig)) <= set(re.findall(r"\b\d+\b", bare_new)):
        return "numbers"
    implied: set[str] = set()
    for modifier, keep in _KEEP.items():
        if modifier == "not":  # negation: kept in any form ("not", "n't", "except" …), never added
            if bool(_NEGATION.search(bare_orig)) != bool(_NEGATION.search(bare_new)):
                return "modifiers"
            continue
        if _has(bare_orig, (modifier,)):
            implied.update(keep)
            if not _has(bare_new, keep):
                return "modifiers"
            opposite = [w for w in _OPPOSITE.get(modifier, ()) if not _has(bare_orig, (w,))]
            if _has(bare_new, opposite):
                return "modifiers"
    added = [w for w in _ADDED if w not in implied and _has(bare_new, (w,)) and not _has(bare_orig, (w,))]
    if added:
        return "modifiers"
    if not _same_scope(original, text, answer_type):
        return "scope"
    return None


def paraphrase_candidates(
    candidates: Sequence[Any], backend: GenerationBackend, config: ParaphraseConfig = ParaphraseConfig()
) -> dict[str, Any]:
    """Rewrite the question of every successful candidate in place (module docstring); returns
    the counts: ``asked``, ``accepted``, ``rejected`` by reason."""
    todo = [c for c in candidates if c.ok and c.question]
    report: dict[str, Any] = {"asked": len(todo), "accepted": 0, "rejected": {}}
    if not todo:
        return report
    params = SamplingParams(max_new_tokens=config.max_new_tokens, temperature=0.0, seed=0)
    outs = backend.generate([[{"role": "user", "content": _PROMPT.format(question=c.question)}] for c in todo], params)
    rejected: Counter[str] = Counter()
    for cand, gens in zip(todo, outs, strict=True):
        text = (gens[0].text if gens else "").strip()
        text = re.sub(r"^(rewritten question|question)\s*:\s*", "", text, flags=re.I).strip()
        reason = check_paraphrase(cand.question, text, cand.answer_type, max_length_ratio=config.max_length_ratio)
        cand.meta["template_question"] = cand.question
        if reason is None:
            cand.meta["paraphrase"] = {"status": "accepted"}
            cand.question = text
            report["accepted"] += 1
        else:
            cand.meta["paraphrase"] = {"status": "rejected", "reason": reason, "text": text[:500]}
            rejected[reason] += 1
    report["rejected"] = dict(rejected.most_common())
    return report
