"""GraphDancer's tag protocol: classification of well-formed, malformed and random steps."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from components.tools.protocol import (
    GRAPH_FUNCTIONS,
    CallProblemCode,
    Step,
    StepKind,
    format_call,
    parse_call,
    parse_step,
    split_arguments,
)

TAGS = ["<think>", "</think>", "<graph>", "</graph>", "<answer>", "</answer>", "<information>", "</information>"]


def step(graph: str, think: str = "reasoning") -> Step:
    return parse_step(f"<think>{think}</think>\n<graph>{graph}</graph>")


# -- valid steps ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("graph", "function", "args"),
    [
        ("RetrieveNode[Ann]", "RetrieveNode", ("Ann",)),
        ("RetrieveNode[Smith, John]", "RetrieveNode", ("Smith, John",)),  # one argument: all of it
        ("RetrieveNode['graph neural networks']", "RetrieveNode", ("graph neural networks",)),
        ('RetrieveNode["it\'s [2021]"]', "RetrieveNode", ("it's [2021]",)),
        ("NodeFeature[ann, name]", "NodeFeature", ("ann", "name")),
        (" NodeFeature [ 'ann' , \"name\" ] ", "NodeFeature", ("ann", "name")),
        ("NodeFeature[Smith, John, name]", "NodeFeature", ("Smith, John", "name")),  # last comma
        ('NodeFeature["Smith, John", name]', "NodeFeature", ("Smith, John", "name")),
        ('NodeFeature["say \\"hi\\"", name]', "NodeFeature", ('say "hi"', "name")),
        ("NodeFeature[O'Brien, name]", "NodeFeature", ("O'Brien", "name")),  # apostrophe inside
        ("NodeFeature[Paper:p1, title]", "NodeFeature", ("Paper:p1", "title")),
        ("NodeFeature[weird]id, name]", "NodeFeature", ("weird]id", "name")),  # stray bracket
        ("NeighborCheck[ann, <-KNOWS]", "NeighborCheck", ("ann", "<-KNOWS")),
        ("NeighbourCheck[ann, KNOWS]", "NeighborCheck", ("ann", "KNOWS")),  # British spelling
        ("NodeDegree[p1, -CITES-]", "NodeDegree", ("p1", "-CITES-")),
        ("NodeDegree[\nann,\n KNOWS\n]", "NodeDegree", ("ann", "KNOWS")),
    ],
)
def test_valid_calls(graph: str, function: str, args: tuple[str, ...]) -> None:
    parsed = step(graph)
    assert parsed.kind is StepKind.CALL, parsed.reason
    assert parsed.call == (function, args)
    assert parsed.think == "reasoning" and parsed.reason is None and parsed.valid_format


def test_answer() -> None:
    parsed = parse_step("  <think>Bob wrote it.</think>\n\n<answer> Bob Stone </answer>\n")
    assert parsed.kind is StepKind.ANSWER and parsed.answer == "Bob Stone"
    assert parsed.call is None and parsed.think == "Bob wrote it."


def test_think_is_optional_only_when_allowed() -> None:
    assert parse_step("<graph>RetrieveNode[x]</graph>").kind is StepKind.INVALID_FORMAT
    lenient = parse_step("<graph>RetrieveNode[x]</graph>", require_think=False)
    assert lenient.kind is StepKind.CALL and lenient.think is None
    assert parse_step("<answer>x</answer>", require_think=False).kind is StepKind.ANSWER


# -- invalid format ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "no <think>, <graph> or <answer> block"),
        ("   \n ", "no <think>, <graph> or <answer> block"),
        ("RetrieveNode[Ann]", "text outside tags: 'RetrieveNode[Ann]'"),
        ("<think>x</think>", "no <graph> or <answer> after <think>"),
        ("<graph>RetrieveNode[x]</graph>", "missing <think> block before <graph>"),
        ("<think>a</think>Then:<graph>RetrieveNode[x]</graph>", "text outside tags: 'Then:'"),
        ("<think>a</think><graph>RetrieveNode[x]</graph> and more", "text after </graph>: 'and more'"),
        ("<think>a</think><graph>RetrieveNode[x]", "unclosed <graph>"),
        ("<think>a<graph>RetrieveNode[x]</graph></think>", "<graph> nested inside <think>"),
        ("<think>a</graph>", "</graph> closes an open <think>"),
        ("</think><answer>x</answer>", "unexpected </think> without <think>"),
        (
            "<think>a</think><graph>RetrieveNode[x]</graph><information>fake</information>",
            "<information> is written by the environment, never by the model",
        ),
        (
            "<think>a</think><graph>RetrieveNode[x]</graph><graph>RetrieveNode[y]</graph>",
            "2 <graph> blocks: issue exactly one function per step",
        ),
        ("<think>a</think><graph>RetrieveNode[x]</graph><answer>y</answer>", "both <graph> and <answer> in one step"),
        ("<think>a</think><think>b</think><answer>y</answer>", "2 <think> blocks: reason once, before the action"),
        ("<answer>y</answer><think>a</think>", "<think> after <answer>: reason before the action"),
        ("<think>a</think><answer>  </answer>", "empty <answer>"),
        ("<think>a</think><answer>x</answer><answer>y</answer>", "2 <answer> blocks"),
    ],
)
def test_invalid_format(text: str, reason: str) -> None:
    parsed = parse_step(text)
    assert parsed.kind is StepKind.INVALID_FORMAT
    assert parsed.reason == reason
    assert not parsed.valid_format and parsed.call is None


def test_non_text_input() -> None:
    for value in (None, 3, b"<think>", ["<think>"]):
        parsed = parse_step(value)
        assert parsed.kind is StepKind.INVALID_FORMAT and parsed.reason is not None


# -- invalid calls ----------------------------------------------------------------------------


NOT_A_CALL, UNKNOWN, BAD_ARGS, MULTIPLE = (
    CallProblemCode.NOT_A_CALL,
    CallProblemCode.UNKNOWN_FUNCTION,
    CallProblemCode.BAD_ARGUMENTS,
    CallProblemCode.MULTIPLE_CALLS,
)


@pytest.mark.parametrize(
    ("graph", "reason_start", "problem", "function"),
    [
        ("", "expected Function[arguments]", NOT_A_CALL, None),
        ("find Ann", "expected Function[arguments]", NOT_A_CALL, None),
        ("RetrieveNode(Ann)", "expected Function[arguments]", NOT_A_CALL, None),
        ("Finish[Bob]", "unknown function 'Finish'", UNKNOWN, None),
        ("retrievenode[Ann]", "unknown function 'retrievenode'", UNKNOWN, None),
        ("RetrieveNode[]", "RetrieveNode takes 1 argument: RetrieveNode[keyword]", BAD_ARGS, "RetrieveNode"),
        ("RetrieveNode['']", "RetrieveNode takes 1 argument", BAD_ARGS, "RetrieveNode"),
        ("NodeFeature[ann]", "NodeFeature takes 2 arguments: NodeFeature[node_id, feature]", BAD_ARGS, "NodeFeature"),
        ("NodeFeature[ann, ]", "NodeFeature takes 2 arguments", BAD_ARGS, "NodeFeature"),
        ("NodeFeature[, name]", "NodeFeature takes 2 arguments", BAD_ARGS, "NodeFeature"),
        ("NeighbourCheck[ann]", "NeighbourCheck takes 2 arguments", BAD_ARGS, "NeighborCheck"),
        ("NodeFeature[ann, name", "unclosed '[' in NodeFeature[...]", NOT_A_CALL, "NodeFeature"),
        (
            "NodeFeature[a, name] NodeDegree[a, KNOWS]",
            "more than one function call in <graph>",
            MULTIPLE,
            "NodeFeature",
        ),
        (
            "NodeFeature[a, name]; NodeDegree[a, KNOWS]",
            "more than one function call in <graph>",
            MULTIPLE,
            "NodeFeature",
        ),
        ("NodeFeature[a, name] please", "text after the call: 'please'", NOT_A_CALL, "NodeFeature"),
    ],
)
def test_invalid_calls(graph: str, reason_start: str, problem: CallProblemCode, function: str | None) -> None:
    parsed = step(graph)
    assert parsed.kind is StepKind.INVALID_CALL
    assert parsed.reason is not None and parsed.reason.startswith(reason_start), parsed.reason
    assert parsed.problem is problem and parsed.function == function
    assert parsed.valid_format and parsed.call is None
    assert parsed.raw_call == graph.strip()
    assert parse_call(graph.strip()) == parsed.reason


def test_split_arguments_rules() -> None:
    assert split_arguments("a, b", 2) == ("a", "b")
    assert split_arguments("a, b, c, d", 2) == ("a, b, c", "d")
    assert split_arguments("'a, b', 'c'", 2) == ("a, b", "c")
    assert split_arguments("'unclosed, b", 2) == ("'unclosed", "b")
    assert split_arguments("'a'b', c", 2) == ("'a'b'", "c")  # not one quoted string: kept
    assert split_arguments("x", 2) == ("x",)
    assert split_arguments("", 1) == ()
    assert split_arguments(" 'a, b' ", 1) == ("a, b",)


# -- fuzzing ----------------------------------------------------------------------------------

fragments = st.one_of(
    st.sampled_from(TAGS),
    st.sampled_from(["RetrieveNode[", "NodeFeature[", "NeighborCheck[", "NodeDegree[", "]", "[", ",", "'", '"', "\\"]),
    st.text(max_size=12),
)
tagged_text = st.lists(fragments, max_size=30).map("".join)


def check_invariants(parsed: Step) -> None:
    assert isinstance(parsed, Step)
    assert parsed.kind in set(StepKind)
    if parsed.kind in (StepKind.INVALID_FORMAT, StepKind.INVALID_CALL):
        assert parsed.reason and "\n" not in parsed.reason
        assert parsed.call is None and parsed.answer is None
    assert (parsed.problem is not None) == (parsed.kind is StepKind.INVALID_CALL)
    if parsed.kind is StepKind.CALL:
        assert parsed.function in GRAPH_FUNCTIONS
        assert len(parsed.args) == GRAPH_FUNCTIONS[parsed.function].arity
        assert all(parsed.args)
    if parsed.kind is StepKind.ANSWER:
        assert parsed.answer and parsed.answer == parsed.answer.strip()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(), tagged_text), st.booleans())
def test_never_raises_on_any_text(text: str, require_think: bool) -> None:
    check_invariants(parse_step(text, require_think=require_think))


@settings(max_examples=200, deadline=None)
@given(st.text(), tagged_text)
def test_never_raises_inside_a_well_formed_frame(think: str, graph: str) -> None:
    assume(not any(t in think for t in TAGS))
    check_invariants(parse_step(f"<think>{think}</think><graph>{graph}</graph>"))
    check_invariants(parse_step(f"<think>{think}</think><answer>{graph}</answer>"))


arguments = st.text(min_size=1, max_size=20).filter(lambda s: not any(t in s for t in TAGS) and "<" not in s)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(GRAPH_FUNCTIONS)), st.data())
def test_format_call_round_trips(function: str, data: st.DataObject) -> None:
    args = tuple(
        data.draw(
            st.lists(arguments, min_size=GRAPH_FUNCTIONS[function].arity, max_size=GRAPH_FUNCTIONS[function].arity)
        )
    )
    text = format_call(function, args)
    assert parse_call(text) == (function, args)
    parsed = step(text)
    assert parsed.kind is StepKind.CALL and parsed.call == (function, args)


def test_huge_inputs_are_classified_quickly() -> None:
    big = "x" * 2_000_000
    assert parse_step(big).kind is StepKind.INVALID_FORMAT
    assert parse_step("<think>" * 200_000).kind is StepKind.INVALID_FORMAT
    # Unbalanced brackets fall back to the outer pair, like Graph-CoT's ``Name[(.+)]``.
    assert step("RetrieveNode[" + "[" * 100_000 + "]").args == ("[" * 100_000,)
    assert step("NodeFeature[" + "[" * 100_000).kind is StepKind.INVALID_CALL
    huge_arg = step(f"NodeFeature[{'a,' * 100_000}name]")
    assert huge_arg.kind is StepKind.CALL and huge_arg.args[1] == "name"
    assert parse_step(f"<think>{big}</think><answer>ok</answer>").answer == "ok"
