"""The five generation axes of the Quizzer (GraphCert) and their allowed-combination tables.

The axes are a *request* to a quizzer, not a label: the real structure of a candidate is
re-derived later from its final evidence.

=================  ==============================================================================
axis               values
=================  ==============================================================================
answer type        ``entity``, ``boolean``, ``number``, ``set``
question pattern   ``head_known`` (head entity given, find the tail), ``tail_known`` (tail given,
                   find the head), ``relation_to_find`` (both entities given, find how they
                   relate), ``hybrid`` (a mix, e.g. several anchors or a path)
difficulty         ``simple``, ``medium``, ``hard``
match family       ``one_hop``, ``multi_hop``, ``intersection``, ``comparison``,
                   ``optional_match``, ``shortest_path``
return family      ``property``, ``distinct_set``, ``aggregation``, ``ranking``, ``boolean``
=================  ==============================================================================

Return families each **answer type** allows (``ANSWER_TYPE_RETURNS``)::

    entity   property, ranking
    boolean  boolean
    number   property, aggregation, ranking
    set      distinct_set, ranking

Match and return families each **difficulty** allows (``DIFFICULTY_MATCHES`` /
``DIFFICULTY_RETURNS``)::

    simple   match  one_hop, optional_match
             return property, distinct_set, aggregation, boolean
    medium   match  one_hop, multi_hop, intersection, comparison, optional_match
             return property, distinct_set, aggregation, ranking, boolean
    hard     match  multi_hop, intersection, comparison, shortest_path
             return distinct_set, aggregation, ranking, boolean

:func:`sample_axes` draws answer type, question pattern and difficulty uniformly, the match family
uniformly among the difficulty's, and the return family uniformly from the **intersection** of
what the answer type and the difficulty allow (so a ``set`` answer never draws ``boolean``). Every
intersection in the tables above is non-empty (checked at import by :func:`validate_tables`); a
caller restricting the choices (``answer_types=…``, ``difficulties=…``) to combinations with an
empty intersection gets a clear :class:`AxesError`. Draws come only from the ``numpy`` generator
passed in, so a seed fixes the sequence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

import numpy as np

__all__ = [
    "ANSWER_TYPES",
    "ANSWER_TYPE_RETURNS",
    "DIFFICULTIES",
    "DIFFICULTY_MATCHES",
    "DIFFICULTY_RETURNS",
    "MATCH_FAMILIES",
    "QUESTION_PATTERNS",
    "RETURN_FAMILIES",
    "Axes",
    "AxesError",
    "allowed_combinations",
    "allowed_returns",
    "sample_axes",
    "validate_tables",
]

ANSWER_TYPES: Final = ("entity", "boolean", "number", "set")
QUESTION_PATTERNS: Final = ("head_known", "tail_known", "relation_to_find", "hybrid")
DIFFICULTIES: Final = ("simple", "medium", "hard")
MATCH_FAMILIES: Final = (
    "one_hop",
    "multi_hop",
    "intersection",
    "comparison",
    "optional_match",
    "shortest_path",
)
RETURN_FAMILIES: Final = ("property", "distinct_set", "aggregation", "ranking", "boolean")

ANSWER_TYPE_RETURNS: Final[Mapping[str, tuple[str, ...]]] = {
    "entity": ("property", "ranking"),
    "boolean": ("boolean",),
    "number": ("property", "aggregation", "ranking"),
    "set": ("distinct_set", "ranking"),
}

DIFFICULTY_MATCHES: Final[Mapping[str, tuple[str, ...]]] = {
    "simple": ("one_hop", "optional_match"),
    "medium": ("one_hop", "multi_hop", "intersection", "comparison", "optional_match"),
    "hard": ("multi_hop", "intersection", "comparison", "shortest_path"),
}

DIFFICULTY_RETURNS: Final[Mapping[str, tuple[str, ...]]] = {
    "simple": ("property", "distinct_set", "aggregation", "boolean"),
    "medium": ("property", "distinct_set", "aggregation", "ranking", "boolean"),
    "hard": ("distinct_set", "aggregation", "ranking", "boolean"),
}


class AxesError(ValueError):
    """An axis value is unknown, or a requested combination allows no return family."""


@dataclass(frozen=True)
class Axes:
    """One draw of the five axes (a request to a quizzer)."""

    answer_type: str
    question_pattern: str
    difficulty: str
    match_family: str
    return_family: str

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("answer_type", self.answer_type, ANSWER_TYPES),
            ("question_pattern", self.question_pattern, QUESTION_PATTERNS),
            ("difficulty", self.difficulty, DIFFICULTIES),
            ("match_family", self.match_family, MATCH_FAMILIES),
            ("return_family", self.return_family, RETURN_FAMILIES),
        ):
            if value not in allowed:
                raise AxesError(f"unknown {name} {value!r} (allowed: {', '.join(allowed)})")

    @property
    def allowed(self) -> bool:
        """True when this combination is one :func:`sample_axes` can draw."""
        return self.match_family in DIFFICULTY_MATCHES[self.difficulty] and self.return_family in allowed_returns(
            self.answer_type, self.difficulty
        )

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Axes:
        return cls(**{k: str(data[k]) for k in cls.__dataclass_fields__})


def allowed_returns(answer_type: str, difficulty: str) -> tuple[str, ...]:
    """Return families allowed by both the answer type and the difficulty, in table order."""
    if answer_type not in ANSWER_TYPE_RETURNS:
        raise AxesError(f"unknown answer type {answer_type!r}")
    if difficulty not in DIFFICULTY_RETURNS:
        raise AxesError(f"unknown difficulty {difficulty!r}")
    by_difficulty = set(DIFFICULTY_RETURNS[difficulty])
    return tuple(r for r in ANSWER_TYPE_RETURNS[answer_type] if r in by_difficulty)


def allowed_combinations() -> list[Axes]:
    """Every combination :func:`sample_axes` can draw (for coverage checks)."""
    return [
        Axes(t, p, d, m, r)
        for t in ANSWER_TYPES
        for p in QUESTION_PATTERNS
        for d in DIFFICULTIES
        for m in DIFFICULTY_MATCHES[d]
        for r in allowed_returns(t, d)
    ]


def validate_tables() -> None:
    """Raise :class:`AxesError` when a table names an unknown value or an answer type ×
    difficulty intersection is empty."""
    for t, rets in ANSWER_TYPE_RETURNS.items():
        if t not in ANSWER_TYPES or not set(rets) <= set(RETURN_FAMILIES):
            raise AxesError(f"ANSWER_TYPE_RETURNS[{t!r}] names an unknown value")
    for d in DIFFICULTIES:
        if not set(DIFFICULTY_MATCHES[d]) <= set(MATCH_FAMILIES):
            raise AxesError(f"DIFFICULTY_MATCHES[{d!r}] names an unknown match family")
        if not set(DIFFICULTY_RETURNS[d]) <= set(RETURN_FAMILIES):
            raise AxesError(f"DIFFICULTY_RETURNS[{d!r}] names an unknown return family")
        for t in ANSWER_TYPES:
            if not allowed_returns(t, d):
                raise AxesError(f"answer type {t!r} and difficulty {d!r} allow no common return family")


validate_tables()


def _pick(rng: np.random.Generator, values: tuple[str, ...]) -> str:
    return values[int(rng.integers(len(values)))]


def sample_axes(
    rng: np.random.Generator,
    *,
    answer_types: Iterable[str] | None = None,
    difficulties: Iterable[str] | None = None,
    max_tries: int = 64,
) -> Axes:
    """Draw one :class:`Axes` (see the module docstring for the tables).

    ``answer_types`` / ``difficulties`` restrict the uniform draws of those axes. When a drawn
    answer type × difficulty pair allows no return family the pair is redrawn (at most
    ``max_tries`` times), then :class:`AxesError` is raised naming the restriction.

    >>> a = sample_axes(np.random.default_rng(0))
    >>> a.allowed
    True
    """
    types = tuple(answer_types) if answer_types is not None else ANSWER_TYPES
    levels = tuple(difficulties) if difficulties is not None else DIFFICULTIES
    for value, allowed, name in ((types, ANSWER_TYPES, "answer type"), (levels, DIFFICULTIES, "difficulty")):
        if not value:
            raise AxesError(f"no {name} to draw from")
        bad = [v for v in value if v not in allowed]
        if bad:
            raise AxesError(f"unknown {name} {bad[0]!r} (allowed: {', '.join(allowed)})")
    if not any(allowed_returns(t, d) for t in types for d in levels):
        raise AxesError(
            f"no return family is allowed by any of answer types {list(types)} with difficulties {list(levels)}"
        )
    for _ in range(max_tries):
        answer_type = _pick(rng, types)
        difficulty = _pick(rng, levels)
        returns = allowed_returns(answer_type, difficulty)
        if not returns:
            continue
        pattern = _pick(rng, QUESTION_PATTERNS)
        match = _pick(rng, DIFFICULTY_MATCHES[difficulty])
        return Axes(answer_type, pattern, difficulty, match, _pick(rng, returns))
    raise AxesError(f"could not draw an allowed combination in {max_tries} tries")
