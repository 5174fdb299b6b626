"""Axis sampling: the return family comes from the answer type × difficulty intersection."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from components.quizzer import axes as ax
from components.quizzer.axes import (
    Axes,
    AxesError,
    allowed_combinations,
    allowed_returns,
    sample_axes,
)


def _draws(seed: int, n: int) -> list[Axes]:
    rng = np.random.default_rng(seed)
    return [sample_axes(rng) for _ in range(n)]


def test_set_answers_never_draw_boolean_and_every_draw_is_allowed() -> None:
    draws = _draws(0, 5000)
    assert all(a.allowed for a in draws)
    assert not any(a.answer_type == "set" and a.return_family == "boolean" for a in draws)
    for a in draws:
        assert a.return_family in ax.ANSWER_TYPE_RETURNS[a.answer_type]
        assert a.return_family in ax.DIFFICULTY_RETURNS[a.difficulty]
        assert a.match_family in ax.DIFFICULTY_MATCHES[a.difficulty]


def test_intersection_table() -> None:
    assert allowed_returns("set", "simple") == ("distinct_set",)
    assert allowed_returns("boolean", "hard") == ("boolean",)
    assert allowed_returns("entity", "hard") == ("ranking",)
    assert set(allowed_returns("number", "medium")) == {"property", "aggregation", "ranking"}
    for t in ax.ANSWER_TYPES:
        for d in ax.DIFFICULTIES:
            assert allowed_returns(t, d), (t, d)
            assert "boolean" not in allowed_returns("set", d)


def test_enough_draws_cover_every_allowed_combination_uniformly_inside_the_intersection() -> None:
    combos = allowed_combinations()
    seen = Counter(_draws(1, 20_000))
    assert set(seen) == set(combos)  # nothing outside, nothing missing
    # the return family is uniform inside the intersection: number × medium has three
    nm = Counter(a.return_family for a in seen.elements() if (a.answer_type, a.difficulty) == ("number", "medium"))
    total = sum(nm.values())
    assert set(nm) == {"property", "aggregation", "ranking"}
    assert all(abs(c / total - 1 / 3) < 0.06 for c in nm.values())


def test_sampling_is_deterministic_per_seed() -> None:
    assert _draws(7, 50) == _draws(7, 50)
    assert _draws(7, 50) != _draws(8, 50)


def test_restrictions_and_empty_intersections_raise_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    assert {sample_axes(rng, answer_types=["set"]).answer_type for _ in range(20)} == {"set"}
    with pytest.raises(AxesError, match="unknown answer type"):
        sample_axes(rng, answer_types=["colour"])
    monkeypatch.setitem(ax.DIFFICULTY_RETURNS, "hard", ("boolean",))
    with pytest.raises(AxesError, match="no common return family"):
        ax.validate_tables()
    with pytest.raises(AxesError, match="no return family is allowed"):
        sample_axes(rng, answer_types=["entity"], difficulties=["hard"])
    # with a mix, the empty pair is redrawn, never returned
    draws = [sample_axes(rng, answer_types=["entity", "boolean"], difficulties=["hard"]) for _ in range(50)]
    assert {a.answer_type for a in draws} == {"boolean"}


def test_axes_round_trip_and_validation() -> None:
    a = Axes("set", "hybrid", "hard", "intersection", "distinct_set")
    assert Axes.from_dict(a.to_dict()) == a and a.allowed
    assert not Axes("set", "hybrid", "simple", "shortest_path", "distinct_set").allowed
    with pytest.raises(AxesError):
        Axes("set", "hybrid", "hard", "teleport", "distinct_set")
