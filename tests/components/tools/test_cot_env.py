"""A Graph-CoT episode end to end on a real graph with real retrieval."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator

import pytest

from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.tools.cot_env import (
    EPISODE_OVER,
    MALFORMED_OUTPUT,
    T_MAX,
    GraphCoTEnvironment,
    GraphCoTTools,
    information_block,
    tool_environment_factory,
)
from components.tools.graph_cot import ErrorCode, GraphCoT
from components.tools.protocol import StepKind
from components.tools.retriever import NodeIndex, shared_embedder
from tests.components.tools.test_graph_cot import library_graph


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphCoT]:
    path = tmp_path_factory.mktemp("episode") / "db"
    load_graph(library_graph(), path)
    with LadybugBackend(path) as backend:
        index = NodeIndex.open(backend, shared_embedder(threads=1), progress=False)
        yield GraphCoT(backend, index=index)


def call(graph: str, think: str = "next") -> str:
    return f"<think>{think}</think>\n<graph>{graph}</graph>"


def test_reset_renders_the_prompt(api: GraphCoT) -> None:
    env = GraphCoTEnvironment(api)
    prompt = env.reset(question="Who wrote 'Attention Is All You Need'?", answer="Ann Lee, Bob Stone")
    assert prompt.endswith("Question: Who wrote 'Attention Is All You Need'?")
    assert "(:Author)-[:WROTE]->(:Paper)" in prompt
    for usage in (
        "RetrieveNode[keyword]",
        "NodeFeature[node_id, feature]",
        "NeighborCheck[node_id, neighbor_type]",
        "NodeDegree[node_id, neighbor_type]",
    ):
        assert usage in prompt
    assert f"at most {T_MAX} graph calls" in prompt
    assert env.trace.row["answer"] == "Ann Lee, Bob Stone" and env.trace.rounds == []
    assert GraphCoTEnvironment(api).reset(id=3) == ""
    assert GraphCoTEnvironment(api, prompt_on_reset=False).reset(question="q") == ""


def test_an_answered_episode(api: GraphCoT) -> None:
    env = GraphCoTEnvironment(api)
    env.reset(question="Who wrote 'Attention Is All You Need'?")

    reply, done = env.step(call("RetrieveNode[Attention Is All You Need]", "find the paper"))
    assert (reply, done) == (information_block("The ID of this retrieval target node is p2."), False)
    assert reply == "\n\n<information>The ID of this retrieval target node is p2.</information>\n\n"

    reply, done = env.step(call("NeighborCheck[p2, author]"))
    assert reply == information_block("The author neighbors of p2 are: ['ann', 'bob'].") and not done
    reply, done = env.step(call("NodeFeature[ann, name]"))
    assert reply == information_block("The name feature of ann are: Ann Lee.") and not done
    reply, done = env.step(call("NodeFeature[bob, name]"))
    assert reply == information_block("The name feature of bob are: Bob Stone.") and not done

    reply, done = env.step("<think>both found</think><answer>Ann Lee, Bob Stone</answer>")
    assert (reply, done) == ("", True)

    trace = env.trace
    assert trace.answered and trace.answer == "Ann Lee, Bob Stone" and not trace.halted
    assert trace.n_rounds == 4 and trace.invalid_calls == 0 and trace.valid_format
    assert [r.index for r in trace.rounds] == [1, 2, 3, 4, 5]
    assert trace.returned_node_ids == [("p2",), ("ann", "bob"), (), (), ()]
    assert [r.kind for r in trace.rounds] == [StepKind.CALL] * 4 + [StepKind.ANSWER]
    assert trace.rounds[0].call is not None and trace.rounds[0].call.args == ("Attention Is All You Need",)
    assert trace.rounds[-1].valid_call is None and trace.rounds[-1].observation == ""
    assert any("Bob Stone" in o for o in trace.observations)
    json.dumps(trace.to_dict())  # the trace is plain data
    assert env.step(call("RetrieveNode[x]")) == ("", True)  # nothing after the end
    assert len(trace.rounds) == 5


def test_invalid_steps_are_answered_and_counted(api: GraphCoT) -> None:
    env = GraphCoTEnvironment(api)
    env.reset(question="q")
    steps = [
        ("I think it is Bob", MALFORMED_OUTPUT),
        (
            call("Finish[Bob]"),
            "Invalid Action. Valid Actions are RetrieveNode[keyword], NeighborCheck[node_id, "
            "neighbor_type], NodeFeature[node_id, feature_name], NodeDegree[node_id, neighbor_type].",
        ),
        (
            call("NodeFeature[ann]"),
            "There is something wrong with the arguments for node checking. "
            "Expect: NodeFeature[node_id, feature_name].",
        ),
        (call("look up Ann"), "Invalid graph call. Expected Exactly One: FunctionName[args]."),
        (
            call("NodeFeature[nobody, name]"),
            "The node or feature name does not exist in the graph. This might be "
            "because your given feature name is not correct. Please modify it.",
        ),
        (
            call("NodeDegree[ann, FRIEND]"),
            "The node or neighbor type does not exist in the graph. This might be "
            "because your given neighbor type is not correct. Please modify it.",
        ),
    ]
    for text, observation in steps:
        reply, done = env.step(text)
        assert reply == information_block(observation) and not done
    env.step("<think>done</think><answer>Bob</answer>")
    trace = env.trace
    assert trace.answered and not trace.valid_format  # one malformed step spoils VF
    assert trace.invalid_calls == 6 and trace.n_rounds == 6
    kinds = [r.kind for r in trace.rounds]
    assert kinds[:4] == [StepKind.INVALID_FORMAT, StepKind.INVALID_CALL, StepKind.INVALID_CALL, StepKind.INVALID_CALL]
    assert [r.executed for r in trace.rounds[:6]] == [False, False, False, False, True, True]
    codes = [r.call.error.code if r.call and r.call.error else None for r in trace.rounds[:6]]
    assert codes == [
        None,
        ErrorCode.UNKNOWN_FUNCTION,
        ErrorCode.BAD_ARGUMENTS,
        ErrorCode.NOT_A_CALL,
        ErrorCode.UNKNOWN_NODE,
        ErrorCode.UNKNOWN_NEIGHBOR_TYPE,
    ]
    assert trace.rounds[0].reason == "text outside tags: 'I think it is Bob'"


def test_loop_limit_halt(api: GraphCoT) -> None:
    env = GraphCoTEnvironment(api)
    env.reset(question="q")
    for i in range(T_MAX):
        reply, done = env.step(call("NodeDegree[ann, WROTE]", f"round {i + 1}"))
        assert reply == information_block("The WROTE neighbor node degree of ann are: 2.") and not done
    reply, done = env.step(call("NodeDegree[ann, WROTE]", "one more"))  # the final turn: not executed
    assert (reply, done) == ("", True)
    trace = env.trace
    assert trace.halted and not trace.answered and not trace.valid_format
    assert len(trace.rounds) == T_MAX + 1 and trace.n_rounds == T_MAX
    assert trace.invalid_calls == 0  # the over-limit step is the halt, not an invalid call
    last = trace.rounds[-1]
    assert last.over_limit and not last.executed and last.call is None and last.valid_call is None
    assert all(r.executed for r in trace.rounds[:T_MAX])
    assert trace.to_dict()["halted"] is True


def test_answer_in_the_final_turn(api: GraphCoT) -> None:
    env = GraphCoTEnvironment(api, max_rounds=2)
    env.reset(question="q")
    env.step(call("RetrieveNode[Ann Lee]"))
    env.step(call("NodeFeature[ann, born]"))
    assert env.step("<think>known</think><answer>1970</answer>") == ("", True)
    assert env.trace.answer == "1970" and not env.trace.halted and env.trace.n_rounds == 2


def test_without_a_final_turn(api: GraphCoT) -> None:
    env = GraphCoTEnvironment(api, max_rounds=2, final_answer_turn=False)
    env.reset(question="q")
    assert not env.step(call("RetrieveNode[Ann Lee]"))[1]
    assert env.step(call("NodeFeature[ann, born]")) == ("", True)
    assert env.trace.halted and env.trace.rounds[-1].executed


def test_tool_methods_are_rounds(api: GraphCoT) -> None:
    env = GraphCoTEnvironment(api, max_rounds=3)
    env.reset(question="q")
    assert env.retrieve_node("Knowledge Graph Embeddings") == "The ID of this retrieval target node is p3."
    assert env.neighbour_check("p3", "author") == "The author neighbors of p3 are: ['bob', 'smith, j']."
    assert env.node_degree("p3", "venue") == "The venue neighbor node degree of p3 are: 1."
    assert env.node_feature("bob", "name") == EPISODE_OVER  # past max_rounds
    trace = env.trace
    assert trace.halted and trace.returned_node_ids == [("p3",), ("bob", "smith, j"), (), ()]
    assert trace.n_rounds == 3 and trace.rounds[-1].over_limit
    assert all(r.model_text is None for r in trace.rounds)
    assert env.retrieve_node("Ann") == EPISODE_OVER


def test_trl_facing_class_exposes_only_reset_and_tools(api: GraphCoT) -> None:
    factory = tool_environment_factory(api)
    tools = factory()
    assert isinstance(tools, GraphCoTTools)
    # TRL's rule: every public function of the class except reset / get_reward is a tool.
    public = {
        name for name, _ in inspect.getmembers(GraphCoTTools, predicate=inspect.isfunction) if not name.startswith("_")
    }
    assert public == {"reset", "retrieve_node", "node_feature", "neighbour_check", "node_degree"}
    for name in public - {"reset"}:
        doc = inspect.getdoc(getattr(GraphCoTTools, name)) or ""
        assert "Args:" in doc
    assert tools.reset(question="q", prompt=[{"role": "user", "content": "q"}]) is None
    assert tools.node_feature("Paper:p1", "year") == "The year feature of Paper:p1 are: 2009."
    assert tools.episode.trace.rounds[0].call is not None
    assert factory() is not tools and factory().episode.trace.rounds == []
