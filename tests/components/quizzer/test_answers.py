"""The answer value is exact and round-trips; comparison normalises separately."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.quizzer.answers import (
    AnswerParseError,
    answers_agree,
    canonical_answer,
    decode_answer,
    encode_answer,
    parse_answer,
    parse_printed,
)
from components.quizzer.candidate import QACandidate, format_answer

# members that break naive encodings: separators, quotes, newlines, unicode, numbers as text, ""
_TRICKY = st.sampled_from(
    [
        "Fun, but a little far fetched",
        "a; b",
        'say "hi"',
        "it's",
        "two\nlines",
        "",
        " padded ",
        "Paris",
        "paris",
        "1",
        "1.0",
        "null",
        "[x]",
        "Crème brûlée, 🍜",
    ]
)
_TEXT = st.one_of(_TRICKY, st.text(max_size=30))
_MEMBER = st.one_of(
    _TEXT, st.integers(-(10**12), 10**12), st.floats(allow_nan=False, allow_infinity=False), st.booleans()
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_MEMBER, min_size=1, max_size=8))
def test_set_answers_round_trip_exactly(members: list) -> None:
    value = canonical_answer(members, "set")
    assert decode_answer(encode_answer(members, "set"), "set") == value
    assert encode_answer(value, "set") == encode_answer(members, "set")
    # the record form (answer_value_json) keeps it too
    c = QACandidate(
        id="x", quizzer="external", seed=0, index=0, answer_type="set", answer_value=value, answer=format_answer(value)
    )
    assert QACandidate.from_record(c.to_record()).answer_value == value
    # a JSON list printed by a program reads back as the same value
    assert parse_printed(encode_answer(value, "set"), "set") == value


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.tuples(st.just("entity"), _TEXT.filter(lambda t: t.strip() != "")),
        st.tuples(
            st.just("number"),
            st.one_of(st.integers(-(10**15), 10**15), st.floats(allow_nan=False, allow_infinity=False)),
        ),
        st.tuples(st.just("boolean"), st.booleans()),
    )
)
def test_scalar_answers_round_trip_exactly(case: tuple) -> None:
    answer_type, value = case
    assert decode_answer(encode_answer(value, answer_type), answer_type) == canonical_answer(value, answer_type)


def test_values_are_exact_and_comparison_normalises() -> None:
    assert canonical_answer(["Paris", "paris", 1, "1", ""], "set") == [1, "", "1", "Paris", "paris"]
    assert answers_agree(["Paris"], ["paris "], "set") and answers_agree([1], ["1"], "set")
    assert not answers_agree(["Paris", ""], ["Paris"], "set")  # the empty string is a member
    # a one-member set whose member holds a comma stays one member
    assert parse_answer(encode_answer(["Fun, but a little far fetched"], "set"), "set") == [
        "Fun, but a little far fetched"
    ]


def test_wrong_types_are_parse_errors() -> None:
    for value, answer_type in [
        ("yes", "boolean"),
        (True, "number"),
        (float("nan"), "number"),
        ([], "set"),
        ([None], "set"),
        ("  ", "entity"),
        ({"a": 1}, "entity"),
        (1, "nope"),
    ]:
        with pytest.raises(AnswerParseError):
            canonical_answer(value, answer_type)
    with pytest.raises(AnswerParseError):
        decode_answer("{not json", "set")
    with pytest.raises(AnswerParseError):
        parse_printed("null", "entity")
