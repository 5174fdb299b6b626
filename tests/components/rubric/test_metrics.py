"""Answers scored by type (components/rubric/metrics.py): the cases that fooled the old
SQuAD-only scoring, and hypothesis properties over numbers, booleans and sets."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.rubric.metrics import (
    FLOAT_REL_TOL,
    answers_equal,
    canonical_text,
    exact_match,
    infer_answer_type,
    set_members,
    token_f1,
    typed_answer,
)


@pytest.mark.parametrize(
    ("pred", "gold", "kind", "equal"),
    [
        ("3.5", "35", "number", False),  # a decimal point is never dropped
        ("-3", "3", "number", False),  # nor a sign
        ("12.0", "12", "number", True),
        ("12", "12.0", "number", True),
        ("12.01", "12", "number", False),  # an integral gold number is exact
        ("1,204", "1204", "number", True),
        ("12 papers", "12", "number", True),
        ("3 or 4", "3", "number", False),  # two numbers: not one answer
        ("3.4567", "3.46", "number", True),  # rounded to the gold's decimals
        ("3.47", "3.46", "number", False),
        ("true", "yes", "boolean", True),
        ("True", "yes", "boolean", True),
        ("Yes, she did.", "yes", "boolean", True),
        ("No.", "false", "boolean", True),
        ("yes", "no", "boolean", False),
        ("maybe", "no", "boolean", False),
        ("1", "yes", "boolean", False),
        ('["Bob", "Ann"]', "Ann; Bob", "set", True),
        ("Ann, Bob", "Ann; Bob", "set", True),
        ("Ann\nBob", ["ann", "BOB"], "set", True),
        ("Ann; Bob; Carl", "Ann; Bob", "set", False),
        ("[2019, 2020]", "2019; 2020.0", "set", True),
        ("the Eiffel Tower", "Eiffel tower", "entity", True),
        ('["Eiffel Tower"]', "Eiffel Tower", "entity", True),
        ("Eiffel", "Eiffel Tower", "entity", False),
    ],
)
def test_typed_cases(pred, gold, kind, equal) -> None:
    assert answers_equal(pred, gold, kind) is equal
    assert exact_match(pred, gold, kind) == float(equal)


def test_types_are_inferred_from_the_gold_value() -> None:
    assert infer_answer_type("yes") == "boolean" and infer_answer_type("False") == "boolean"
    assert infer_answer_type("-3.5") == "number" and infer_answer_type(7) == "number"
    assert infer_answer_type(["a"]) == "set" and infer_answer_type("Ann Lee") == "entity"
    assert answers_equal("true", "yes") and not answers_equal("35", "3.5")


def test_f1_gives_no_partial_credit_to_numbers_and_booleans() -> None:
    assert token_f1("12 13", "12", "number") == 0.0
    assert token_f1("yes no", "yes", "boolean") == 1.0  # the first word decides a yes/no answer
    assert token_f1("Ann; Carl", "Ann; Bob", "set") == pytest.approx(0.5)
    assert token_f1("Ann Lee", "Ann", "entity") == pytest.approx(2 / 3)


def test_canonical_text_is_what_judges_see() -> None:
    assert canonical_text(True) == "yes" and canonical_text("12.0", "number") == "12"
    assert canonical_text(["b", "a"], "set") == "a; b" and canonical_text('["x"]', "entity") == "x"
    assert canonical_text("perhaps", "boolean") == "perhaps"  # unreadable: its text, unchanged


# -- properties ------------------------------------------------------------------------------

_ints = st.integers(min_value=-(10**9), max_value=10**9)


@given(_ints)
def test_an_integer_equals_its_float_and_thousands_forms(n: int) -> None:
    assert answers_equal(f"{n}.0", str(n), "number")
    assert answers_equal(f"{n:,}", n, "number")
    assert answers_equal(str(n), float(n), "number")


@given(_ints, _ints)
def test_distinct_integers_never_match(a: int, b: int) -> None:
    if a != b:
        assert not answers_equal(str(a), str(b), "number")
        assert not answers_equal(f"{a}.0", f"{b}", "number")


@given(st.integers(min_value=1, max_value=10**6))
def test_sign_and_decimal_point_are_kept(n: int) -> None:
    assert not answers_equal(str(-n), str(n), "number")
    text = str(n)
    if len(text) > 1:
        dotted = text[:-1] + "." + text[-1]
        assert not answers_equal(dotted, text, "number")
        assert not answers_equal(text, dotted, "number")


@given(st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False))
def test_floats_match_within_the_stated_tolerance(x: float) -> None:
    gold = f"{x:.2f}"
    g = float(gold)
    if g == 0 or g.is_integer():
        return
    assert answers_equal(repr(g * (1 + FLOAT_REL_TOL / 2)), gold, "number")
    far = g * (1 + 4 * FLOAT_REL_TOL) + 0.02
    assert not answers_equal(f"{far:.2f}", gold, "number")


@given(st.booleans(), st.sampled_from(["", ".", "!"]), st.sampled_from([str.lower, str.upper, str.title]))
def test_boolean_forms(value: bool, punct: str, case) -> None:
    for word in ("yes", "true") if value else ("no", "false"):
        assert answers_equal(case(word) + punct, "yes" if value else "no", "boolean")
        assert not answers_equal(case(word) + punct, "no" if value else "yes", "boolean")
    assert typed_answer(value, "boolean").value is value


_member = st.text(alphabet=st.characters(categories=("L", "N"), max_codepoint=0x17F), min_size=1, max_size=8)


@settings(max_examples=150)
@given(st.lists(_member, min_size=1, max_size=6, unique_by=lambda s: set_members([s])[0] if set_members([s]) else s))
def test_sets_read_the_same_from_every_separator(members: list[str]) -> None:
    keys = set_members(members)
    if not keys or len(keys) != len(members):
        return
    for text in ("; ".join(members), "\n".join(members), json.dumps(members), json.dumps(members[::-1])):
        assert set_members(text) == keys
    if not any("," in m for m in members):
        assert set_members(", ".join(members)) == keys
    assert answers_equal(json.dumps(members[::-1]), "; ".join(members), "set")


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_numbers_never_crash(x: float) -> None:
    t = typed_answer(x, "number")
    assert t.ok == math.isfinite(x)
    exact_match(str(x), "1", "number")


@given(st.text(max_size=40))
def test_arbitrary_text_never_crashes(text: str) -> None:
    for kind in ("boolean", "number", "set", "entity", None):
        assert exact_match(text, "12", kind) in (0.0, 1.0)
        assert 0.0 <= token_f1(text, "Ann; Bob", kind) <= 1.0
