"""The shared episode interface, driven with model text, for the sandbox and graph-IR tools."""

from __future__ import annotations

import json

import pytest

from components.cypher.query_path import ReadOnlyQueryPath
from components.tools.env import ENVIRONMENTS, ToolEnvironment
from components.tools.episodes import GraphIREnvironment, PythonCypherEnvironment
from components.tools.protocol import StepKind
from components.tools.sandbox import SandboxLimits


def test_registry_names_all_three_tool_sets() -> None:
    import components.tools.cot_env  # noqa: F401 - registers graph_cot

    assert {"graph_cot", "python_cypher", "graph_ir"} <= set(ENVIRONMENTS)


@pytest.fixture()
def py_env(ladybug_backend):
    schema = ladybug_backend.schema()
    env = PythonCypherEnvironment(
        ReadOnlyQueryPath(ladybug_backend, schema=schema),
        schema,
        limits=SandboxLimits(cell_timeout_s=5),
        max_rounds=3,
    )
    yield env
    env.close()


def test_python_cypher_episode_records_calls_node_ids_and_evidence(py_env) -> None:
    assert isinstance(py_env, ToolEnvironment)
    prompt = py_env.reset(question="Who works at Acme?", answer="Ann, Cat")
    assert "Who works at Acme?" in prompt and "(:Person)-[:WORKS_AT" in prompt
    reply, done = py_env.step(
        "Let me look.\n```python\nr = cypher('MATCH (p:Person)-[:WORKS_AT]->(:Company {name: $c}) "
        "RETURN p.id AS id, p.name AS name ORDER BY name', c='Acme')\nmark_evidence(r)\nprint(r.rows)\n```"
    )
    assert not done and reply.startswith("\n\n<information>") and "(('ann', 'Ann'), ('cat', 'Cat'))" in reply
    reply, done = py_env.step("```python\nprint(1)\n```\n```python\nprint(2)\n```")
    assert not done and "2 code blocks" in reply
    reply, done = py_env.step("<answer>Ann, Cat</answer>")
    assert done and reply == ""
    trace = py_env.trace
    assert trace.answer == "Ann, Cat"
    assert [r.kind for r in trace.rounds] == [StepKind.CALL, StepKind.INVALID_CALL, StepKind.ANSWER]
    assert trace.returned_node_ids[0] == ("ann", "cat")
    assert (trace.n_rounds, trace.invalid_calls, trace.valid_format) == (2, 1, True)
    assert [t.rows for t in py_env.evidence] == [(("ann", "Ann"), ("cat", "Cat"))]
    json.dumps(trace.to_dict())  # the trace is plain data


def test_python_cypher_loop_limit_and_invalid_format(py_env) -> None:
    py_env.reset(question="q")
    for _ in range(3):
        assert py_env.step("no code here")[1] is False
    reply, done = py_env.step("```python\nprint('too late')\n```")
    assert done and py_env.trace.halted and py_env.trace.rounds[-1].over_limit
    assert not py_env.trace.valid_format and py_env.trace.answer is None
    assert "too late" not in "".join(py_env.trace.observations)


IR = {
    "problem_type": "shortest_path",
    "graph": {
        "type": "adjacency_list",
        "data": {"A": {"B": 2, "C": 5}, "B": {"C": 1}},
        "directed": False,
        "weighted": True,
    },
    "parameters": {"source": "A", "target": "C"},
}


def test_graph_ir_episode() -> None:
    env = GraphIREnvironment(max_rounds=4)
    assert env.reset(question="Cheapest route from A to C?") == "Cheapest route from A to C?"
    reply, done = env.step(f"<think>build it</think><graph>{json.dumps(IR)}</graph>")
    assert not done and reply.startswith("\n\n<result>")
    result = json.loads(reply.strip()[len("<result>") : -len("</result>")])
    assert result["answer"]["path"] == ["A", "B", "C"] and result["optimal"] is True
    reply, done = env.step("<graph>{not json</graph>")
    assert not done and env.trace.rounds[-1].call is not None and not env.trace.rounds[-1].call.ok
    reply, done = env.step("<answer>The path costs \\boxed{3}</answer>")
    assert done and env.trace.answer == "3"
    assert (env.trace.n_rounds, env.trace.invalid_calls) == (2, 1)
