"""Episodes for the Python + Cypher sandbox (GraphCert) and the graph-IR solver (GRAIN), on the
shared round loop of :mod:`components.tools.env` (the Graph-CoT episode lives in
:mod:`components.tools.cot_env`).

**Python + Cypher** (``python_cypher``): each step is exactly one fenced ```` ```python ```` block,
run in the episode's persistent sandbox; the environment replies with the cell's output, its
error and a summary of every traced result inside ``<information>``. ``<answer>…</answer>`` ends
the episode; the evidence is what ``mark_evidence`` registered in the parent.

**Graph IR** (``graph_ir``): each step is one ``<graph>{json IR}</graph>``; the environment replies
with the solver's ``<result>…</result>``. ``<answer>…\\boxed{…}</answer>`` ends the episode (the
boxed text, if any, is the answer).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from components.graph.schema import GraphSchema
from components.tools.env import T_MAX, ParsedStep, RoundLoop, register_environment
from components.tools.graph_ir import SolveOptions, graph_tool_result
from components.tools.protocol import StepKind
from components.tools.sandbox import CellResult, SandboxEpisode, SandboxLimits
from components.tools.traced import TracedResult

__all__ = [
    "GRAPH_IR_SYSTEM_PROMPT",
    "CodeCall",
    "GraphIREnvironment",
    "IRCall",
    "SOLVER_ENVS",
    "PythonCypherEnvironment",
    "graph_cot_envs",
    "python_cypher_envs",
    "returned_node_ids",
    "solver_envs",
    "traced_values",
]

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)
_CODE = re.compile(r"```(?:python|py)[ \t]*\n(.*?)```", re.S)
_GRAPH = re.compile(r"<graph>(.*?)</graph>", re.S)
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_ID_COLUMN = re.compile(r"(^|[._])id$", re.I)


def returned_node_ids(result: TracedResult) -> tuple[str, ...]:
    """Node ids a traced result returned: ids of node values and values of ``id``-like columns
    (``id``, ``p.id``, ``paper_id``), distinct, in row order."""
    seen: dict[str, None] = {}
    id_cols = [i for i, c in enumerate(result.columns) if _ID_COLUMN.search(c)]
    for row in result.rows:
        for i, value in enumerate(row):
            if isinstance(value, dict) and "_label" in value and "id" in value:
                seen.setdefault(str(value["id"]), None)
            elif i in id_cols and isinstance(value, (str, int)):
                seen.setdefault(str(value), None)
    return tuple(seen)


@dataclass(frozen=True)
class CodeCall:
    """One code cell as a tool call."""

    code: str
    cell: CellResult
    node_ids: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.cell.ok

    def result_values(self) -> list[Any]:
        """What this cell's queries obtained, for grounding an answer (docs/evaluation.md): every
        cell of every traced result (a node cell as its display name), each column's values as
        one list, and each result's row count."""
        return [v for t in self.cell.traced for v in traced_values(t)]

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "node_ids": list(self.node_ids), **self.cell.to_json()}


def _shown(value: Any) -> Any:
    if isinstance(value, dict) and "_label" in value:
        for key in ("name", "title", "id"):
            if value.get(key) is not None:
                return value[key]
        return None
    return value


def traced_values(result: TracedResult) -> list[Any]:
    """A traced result's values as candidates an answer may equal (:meth:`CodeCall.result_values`).

    >>> t = TracedResult("q1", "Q", {}, ("n",), ((3,), (4,)), 2, False, False, "h")
    >>> traced_values(t)
    [3, 4, [3, 4], 2]

    A truncated result's row count is not the real count, so it is left out.
    """
    cells = [_shown(v) for row in result.rows for v in row]
    columns = [[_shown(row[i]) for row in result.rows] for i in range(len(result.columns))]
    out: list[Any] = [v for v in cells if v is not None and not isinstance(v, (dict, list))]
    out += [[v for v in col if v is not None and not isinstance(v, (dict, list))] for col in columns]
    if not result.truncated:
        out.append(result.row_count)
    return out


_PY_PROMPT = """\
Answer the question using the graph. Each step, write exactly one Python code block (```python ...```). \
Inside it, cypher(query, **params) runs one read-only Cypher query (Neo4j dialect, parameters as $name) \
and returns a TracedResult (.rows, .columns, .truncated; at most 200 rows are kept); \
mark_evidence(*results) marks the results your answer rests on; select_schema() shows the schema. \
Variables persist between steps. When done, write <answer>...</answer>. At most {max_rounds} steps.

Schema:
{schema}

Question: {question}"""


@register_environment("python_cypher")
class PythonCypherEnvironment(RoundLoop):
    """GraphCert's sandbox as an episode. One sandbox process per episode (per ``reset``)."""

    def __init__(
        self,
        query_path: Any,
        schema: GraphSchema,
        *,
        limits: SandboxLimits = SandboxLimits(),
        max_rounds: int = T_MAX,
        final_answer_turn: bool = True,
    ) -> None:
        super().__init__(max_rounds=max_rounds, final_answer_turn=final_answer_turn)
        self.query_path, self.schema, self.limits = query_path, schema, limits
        self.sandbox: SandboxEpisode | None = None

    def reset(self, **row: Any) -> str:
        self.close()
        self.start(row)
        self.sandbox = SandboxEpisode(self.query_path, schema=self.schema, limits=self.limits)
        question = row.get("question")
        if not isinstance(question, str):
            return ""
        return _PY_PROMPT.format(
            max_rounds=self.max_rounds, schema=self.schema.to_text(counts=False), question=question
        )

    def parse(self, model_text: str) -> ParsedStep:
        answers, codes = _ANSWER.findall(model_text), _CODE.findall(model_text)
        if answers and not codes:
            return ParsedStep(StepKind.ANSWER, answer=answers[-1].strip())
        if answers and codes:
            return ParsedStep(StepKind.INVALID_FORMAT, "a step holds either one code block or the answer")
        if len(codes) == 1:
            return ParsedStep(StepKind.CALL, payload=codes[0])
        if len(codes) > 1:
            return ParsedStep(StepKind.INVALID_CALL, f"{len(codes)} code blocks; write one per step")
        return ParsedStep(StepKind.INVALID_FORMAT, "no ```python code block and no <answer>")

    def execute(self, step: ParsedStep) -> tuple[CodeCall | None, str, bool]:
        if step.kind is not StepKind.CALL or self.sandbox is None:
            return None, f"Invalid step: {step.reason}.", False
        cell = self.sandbox.run(step.payload)
        ids: dict[str, None] = {}
        for t in cell.traced:
            ids.update(dict.fromkeys(returned_node_ids(t)))
        return CodeCall(step.payload, cell, tuple(ids)), cell.observation(), True

    @property
    def evidence(self) -> list[TracedResult]:
        return self.sandbox.evidence_results() if self.sandbox is not None else []

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None


@dataclass(frozen=True)
class IRCall:
    text: str
    result: dict[str, Any] = field(default_factory=dict)
    node_ids: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.result.get("status") in {"ok", "no_solution"}

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "result": self.result, "node_ids": list(self.node_ids)}


@register_environment("graph_ir")
class GraphIREnvironment(RoundLoop):
    """GRAIN's graph-IR tool as an episode."""

    def __init__(
        self, *, options: SolveOptions | None = None, max_rounds: int = T_MAX, final_answer_turn: bool = True
    ) -> None:
        super().__init__(max_rounds=max_rounds, final_answer_turn=final_answer_turn)
        self.options = options

    def reset(self, **row: Any) -> str:
        self.start(row)
        return str(row.get("question", ""))

    def parse(self, model_text: str) -> ParsedStep:
        answers, graphs = _ANSWER.findall(model_text), _GRAPH.findall(model_text)
        if answers and not graphs:
            boxed = _BOXED.findall(answers[-1])
            return ParsedStep(StepKind.ANSWER, answer=(boxed[-1] if boxed else answers[-1]).strip())
        if len(graphs) == 1 and not answers:
            return ParsedStep(StepKind.CALL, payload=graphs[0])
        if len(graphs) > 1:
            return ParsedStep(StepKind.INVALID_CALL, f"{len(graphs)} <graph> blocks; write one per step")
        return ParsedStep(StepKind.INVALID_FORMAT, "expected one <graph>…</graph> or <answer>…</answer>")

    def execute(self, step: ParsedStep) -> tuple[IRCall | None, str, bool]:
        if step.kind is not StepKind.CALL:
            error = {"status": "error", "code": "invalid_step", "message": step.reason}
            return None, json.dumps(error), False
        result = graph_tool_result(step.payload, self.options)
        return IRCall(step.payload, result), json.dumps(result, ensure_ascii=False), True

    def reply(self, observation: str) -> str:
        return f"\n\n<result>{observation}</result>\n\n"


# GRAIN's instructions for the graph-IR environment (a system prompt; the task is the user turn)
GRAPH_IR_SYSTEM_PROMPT: Final = (
    "You solve graph problems with a graph tool. First write the problem as JSON inside "
    '<graph>…</graph>: {"problem_type": …, "graph": {"type": "adjacency_list", "data": {node: '
    '{neighbour: weight}}, "directed": false, "weighted": true}, "parameters": {…}}. The tool replies '
    "inside <result>…</result>. Then give the final answer inside <answer>…</answer>."
)


@contextmanager
def python_cypher_envs(db_location: str, *, max_rounds: int) -> Iterator[Callable[[], Any]]:
    """A factory of Python + Cypher episodes over the graph at ``db_location`` (opened read-only
    for the duration; one sandbox per episode)."""
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph import open_backend

    backend = open_backend(db_location)
    try:
        schema = backend.schema()
        qp = ReadOnlyQueryPath(backend, schema=schema)
        yield lambda: PythonCypherEnvironment(qp, schema, max_rounds=max_rounds)
    finally:
        backend.close()


@contextmanager
def graph_cot_envs(db_location: str, *, max_rounds: int, threads: int | None = None) -> Iterator[Callable[[], Any]]:
    """A factory of Graph-CoT episodes (:class:`~components.tools.cot_env.GraphCoTEnvironment`)
    over the graph at ``db_location``: one :class:`~components.tools.graph_cot.GraphCoT` API
    (``RetrieveNode``'s embedding index built once) shared by every episode."""
    from components.graph import open_backend
    from components.tools.cot_env import GraphCoTEnvironment
    from components.tools.graph_cot import GraphCoT
    from components.tools.retriever import NodeIndex, shared_embedder

    backend = open_backend(db_location)
    try:
        api = GraphCoT(backend, index=NodeIndex.open(backend, shared_embedder(threads=threads), progress=False))
        yield lambda: GraphCoTEnvironment(api, max_rounds=max_rounds)
    finally:
        backend.close()


#: the environments a Solver is trained and evaluated in (GraphCert's sandbox, GraphDancer's API)
SOLVER_ENVS: Final = ("python_cypher", "graph_cot")


def solver_envs(env: str, db_location: str, *, max_rounds: int, threads: int | None = None) -> Any:
    """:func:`python_cypher_envs` or :func:`graph_cot_envs` by name (a context manager)."""
    if env == "python_cypher":
        return python_cypher_envs(db_location, max_rounds=max_rounds)
    if env == "graph_cot":
        return graph_cot_envs(db_location, max_rounds=max_rounds, threads=threads)
    raise ValueError(f"unknown solver environment {env!r}; known: {list(SOLVER_ENVS)}")
