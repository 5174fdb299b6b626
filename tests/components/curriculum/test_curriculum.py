"""The curriculum: levels from rounds, the sampler's distributions against hand-computed values,
checkpointing, and splits that no entity crosses."""

from __future__ import annotations

import doctest
import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.curriculum import (
    CurriculumConfig,
    CurriculumSampler,
    entity_grouped_splits,
    eta,
    gaussian_schedule,
    level_of,
    level_probabilities,
    round_kinds,
)
from components.curriculum import build as build_module
from components.curriculum import sampler as sampler_module
from components.curriculum import splits as splits_module


@pytest.mark.parametrize("module", [build_module, sampler_module, splits_module])
def test_docstring_examples(module) -> None:
    failures, tried = doctest.testmod(module)
    assert tried > 0 and failures == 0


def test_rounds_and_levels() -> None:
    assert round_kinds([1, 3, 0, ["x", "x"]]) == ["S", "E", "", "S"]  # repeated ids count once
    assert level_of([]) == "easy" and level_of([5]) == "easy"
    assert level_of([1, 1, 1]) == "medium" and level_of([1, 4, 1]) == "medium"
    assert level_of([3, 1, 2]) == "hard" and level_of([2, 2]) == "hard"


def _hand_g(progress: float) -> list[float]:
    """By hand: K = 3 levels, κ = 3, σ = 0.75 → 2σ² = 1.125, μ = progress³·2."""
    mu = progress**3 * 2
    w = [math.exp(-((k - mu) ** 2) / 1.125) for k in range(3)]
    return [x / sum(w) for x in w]


def test_sampler_distributions_at_start_middle_end() -> None:
    total = 101  # progress t/(T-1): 0, 0.5, 1
    # t = 0: μ = 0, weights 1, e^{-1/1.125}, e^{-4/1.125}; η = 0.2
    assert gaussian_schedule(0, total) == pytest.approx([0.69460, 0.28556, 0.01984], abs=1e-5)
    assert level_probabilities(0, total) == pytest.approx(
        [0.8 * 0.69460 + 0.1, 0.8 * 0.28556 + 0.1, 0.8 * 0.01984], abs=1e-5
    )
    # t = 50: μ = 0.25, η = 0.5
    g = _hand_g(0.5)
    assert g == pytest.approx([0.58457, 0.37481, 0.04062], abs=1e-5)
    assert gaussian_schedule(50, total) == pytest.approx(g)
    assert eta(50, total) == pytest.approx(0.5)
    assert level_probabilities(50, total) == pytest.approx([0.5 * g[0] + 0.25, 0.5 * g[1] + 0.25, 0.5 * g[2]])
    # t = T - 1: μ = 2 (all Hard-centred), η = 0.8
    assert gaussian_schedule(100, total) == pytest.approx([0.01984, 0.28556, 0.69460], abs=1e-5)
    assert level_probabilities(100, total) == pytest.approx(
        [0.2 * 0.01984 + 0.4, 0.2 * 0.28556 + 0.4, 0.2 * 0.69460], abs=1e-5
    )
    # an empty level is removed and the rest renormalised
    p = level_probabilities(0, total, available=(True, False, True))
    assert (
        p[1] == 0.0
        and sum(p) == pytest.approx(1.0)
        and p[0] / p[2] == pytest.approx((0.8 * 0.69460 + 0.1) / (0.8 * 0.01984), rel=1e-4)
    )
    with pytest.raises(ValueError):
        level_probabilities(0, total, available=(False, False, False))
    with pytest.raises(ValueError, match="no items"):
        CurriculumSampler({"easy": [], "medium": []}, total_steps=3)
    with pytest.raises(ValueError):
        CurriculumConfig(prior=(0.6, 0.6, 0.0))
    with pytest.raises(ValueError):
        eta(101, total)


def test_sampler_draws_follow_p_and_checkpoint_resumes_exactly() -> None:
    items = {"easy": [f"e{i}" for i in range(5)], "medium": [f"m{i}" for i in range(5)], "hard": ["h0"]}
    s = CurriculumSampler(items, total_steps=3, seed=7)
    draws = Counter(level for level, _ in s.sample(batch=20000))
    p0 = level_probabilities(0, 3)
    for k, level in enumerate(("easy", "medium", "hard")):
        assert draws[level] / 20000 == pytest.approx(p0[k], abs=0.015)
    assert s.step == 1
    state = s.state_dict()
    a = s.sample(batch=50)
    t = CurriculumSampler(items, total_steps=3, seed=999)
    t.load_state_dict(state)
    assert t.sample(batch=50) == a and t.step == s.step
    with pytest.raises(ValueError, match="length"):
        CurriculumSampler(items, total_steps=4).load_state_dict(state)
    with pytest.raises(ValueError, match="unknown levels"):
        CurriculumSampler({"trivial": [1]}, total_steps=3)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("abcdefghij"), min_size=1, max_size=3), min_size=1, max_size=40),
    st.integers(0, 1000),
)
def test_no_entity_crosses_splits(entity_lists, seed) -> None:
    items = [(f"q{i}", ents) for i, ents in enumerate(entity_lists)]
    ood = {"q0"}
    out = entity_grouped_splits(items, seed=seed, ood=ood)
    assert set(out) == {i for i, _ in items}
    where: dict[str, set[str]] = {}
    for item_id, ents in items:
        for e in ents:
            where.setdefault(e, set()).add(out[item_id])
    assert all(len(s) == 1 for s in where.values())
    assert out["q0"] == "test"


def test_split_fractions_track_the_targets_with_singleton_groups() -> None:
    items = [(f"q{i}", [f"ent{i}"]) for i in range(1000)]
    counts = Counter(entity_grouped_splits(items, seed=3).values())
    assert counts == {"train": 800, "validation": 100, "test": 100}


@pytest.mark.parametrize("seed", range(5))
def test_a_large_group_is_placed_first_so_every_split_reaches_its_share(seed) -> None:
    """One group of 70 % of the items (node keys chain many questions together) and singletons:
    placed largest first, the big group lands in train while every split still has room and the
    singletons fill each split to its share, whatever the seed (placed in shuffled order, a big
    group arriving late overfills train and starves test)."""
    items = [(f"big{i}", ["hub-free chain"]) for i in range(700)] + [(f"q{i}", [f"ent{i}"]) for i in range(300)]
    out = entity_grouped_splits(items, seed=seed)
    assert Counter(out.values()) == {"train": 800, "validation": 100, "test": 100}
    assert {out[f"big{i}"] for i in range(700)} == {"train"}


def test_train_only_items_take_their_groups_to_train() -> None:
    items = [(f"q{i}", [f"e{i}"]) for i in range(20)] + [("bad", ["e3"]), ("bad2", ["z"])]
    plain = entity_grouped_splits(items, fractions=(0.5, 0.25, 0.25), seed=1)
    held = [i for i, s in plain.items() if s != "train" and i.startswith("q")]
    forced = entity_grouped_splits(items, fractions=(0.5, 0.25, 0.25), seed=1, train_only=["bad", "bad2", held[0]])
    assert forced["bad"] == forced["q3"] == forced["bad2"] == forced[held[0]] == "train"
    assert {"validation", "test"} <= set(forced.values())


def test_held_out_items_are_the_only_validation_and_test_items() -> None:
    held = [f"h{i}" for i in range(20)]
    items = [(h, [f"e{i}"]) for i, h in enumerate(held)] + [
        ("p1", ["e3", "x"]),  # shares a node with h3: trains nowhere
        ("p2", ["x"]),  # shares one with p1, which shares one with h3: the same group
        ("p3", ["y"]),
        ("p4", ["z"]),
        ("o", ["w"]),  # out of distribution: never trains
    ]
    out = entity_grouped_splits(items, fractions=(0.5, 0.1, 0.4), seed=0, held_out=held, ood=["o"])
    assert Counter(out[h] for h in held) == {"validation": 4, "test": 16}  # 0.1 : 0.4 of the held-out items
    assert out["p3"] == out["p4"] == "train"
    assert not {"p1", "p2", "o"} & set(out)
    assert entity_grouped_splits(items, fractions=(0.5, 0.1, 0.4), seed=0, held_out=held, ood=["o"]) == out
