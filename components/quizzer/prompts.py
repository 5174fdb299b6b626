"""Prompts of the LLM Quizzer and its output protocol.

**Output protocol** (what the model must write, one assistant turn at a time):

* An **exploration turn** is exactly one fenced ```` ```python ```` block. It runs in the
  episode's persistent sandbox; the reply is ``<information>…</information>`` with the output,
  a preview of every query result and any error.
* The **final turn** is one ```` ```python ```` block — the *final program*: self-contained (it
  runs in a fresh sandbox, so earlier variables are gone), it re-runs its queries with
  ``cypher()``, computes the answer, calls ``mark_evidence(...)`` on the results the answer rests
  on and ends with ``print(answer)`` — followed by ``<question>…</question><answer>…</answer>``.
  A turn holding ``<question>`` or ``<answer>`` is treated as the final turn.
* A **closing turn** follows an exploration turn (or the repair turn) whose program ran, printed
  an answer of the requested type and marked its evidence; that program becomes the final program.
  By default the closing is forced: the model's next turn is started with ``<question>`` and ends
  at ``</question>`` — the model writes only the question the program answers, and the answer is
  what the program printed (:data:`CLOSING_FORCED` says so). With ``closing: hint`` the closing is
  only offered (:data:`CLOSING_HINT`) and the model writes ``<question>…</question><answer>…</answer>``
  itself.
* Answers by type: entity — the name; boolean — ``yes`` / ``no``; number — digits only; set —
  items separated by ``; ``. The final program's last printed line must equal the stated answer
  after normalisation.

If the episode fails, one **repair** turn (:func:`repair_message`) states the failure and asks for a
minimally fixed final turn. With ``code_first`` (the default) the first turn and the repair turn
are started with a ```` ```python ```` block, so a program always comes before a question.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from components.graph.schema import GraphSchema
from components.quizzer.axes import Axes

__all__ = [
    "ANSWER_FORMATS",
    "CLOSING_FORCED",
    "CLOSING_HINT",
    "REPEATED_NOTE",
    "MATCH_TEXT",
    "PATTERN_TEXT",
    "RETURN_TEXT",
    "information_message",
    "repair_message",
    "example_text",
    "system_prompt",
    "task_message",
]

ANSWER_FORMATS: Final = {
    "entity": "one name (an entity), e.g. Alice Smith",
    "boolean": "yes or no",
    "number": "a number, digits only, e.g. 3",
    "set": "several names separated by '; ', e.g. A; B; C",
}

PATTERN_TEXT: Final = {
    "head_known": "the start node is the known source entity; the answer is found by following relationships out of it",
    "tail_known": "the start node is the known target entity; the answer is found by following relationships into it",
    "relation_to_find": "two entities are given in the question; the answer concerns how they are related",
    "hybrid": "mix known and unknown parts (several anchors or a path)",
}

MATCH_TEXT: Final = {
    "one_hop": "one relationship from the start node",
    "multi_hop": "a path of two relationships",
    "intersection": "nodes connected to the start node and to a second given node",
    "comparison": "compare the start node with another node of the same label",
    "optional_match": "OPTIONAL MATCH (the answer may be zero or none)",
    "shortest_path": "shortestPath between the start node and another node",
}

RETURN_TEXT: Final = {
    "property": "a property value of one node",
    "distinct_set": "a set of distinct nodes (RETURN DISTINCT)",
    "aggregation": "count / sum / avg / min / max",
    "ranking": "ORDER BY ... DESC LIMIT (the top entry)",
    "boolean": "a yes/no fact",
}

_SYSTEM: Final = """\
You write one question about a graph, its answer, and the Python program that proves the answer.

Tools inside ```python blocks:
- cypher(query, **params): one read-only Cypher query (Neo4j dialect, values as $parameters). Returns a result with .rows (list of tuples), .columns, .truncated. At most 200 rows are kept.
- mark_evidence(*results): marks the cypher() results your answer rests on.
- select_schema(): the schema as a dict.
Only MATCH / OPTIONAL MATCH / WITH / RETURN queries. No CREATE, MERGE, SET, DELETE, CALL.
Follow relationship directions exactly as in the schema.

Protocol:
- Each turn write exactly ONE ```python block. It runs and you get <information>...</information> back.
- When ready, write the FINAL turn: one ```python block that runs the query again, computes `answer`, calls mark_evidence(result) and ends with print(answer). Then write <question>...</question><answer>...</answer>.
- The final block starts from scratch: define everything it uses.
- Or, right after a block that printed your answer and marked its evidence, write only <question>...</question><answer>...</answer>: that block becomes the final program.
- At most {max_turns} turns.

Schema (property types in braces; relationships only in the direction shown):
{schema}

{examples}"""

_GENERIC_EXAMPLE: Final = """Example of a final turn (for a different graph):
```python
r = cypher("MATCH (p:Person {{id: $pid}})-[:LIVES_IN]->(c:City) RETURN c.name AS name", pid="p1")
answer = r.rows[0][0]
mark_evidence(r)
print(answer)
```
<question>In which city does the person "Ann" live?</question>
<answer>Paris</answer>"""

_TASK: Final = """\
Start node: (:{label} {{{pk}: {id!r}}}) named "{name}".
Its neighbourhood:
{neighbourhood}

Write a question about this node with:
- answer type: {answer_type} — answer format: {answer_format}
- question pattern: {pattern}
- difficulty: {difficulty}
- query shape: {match}
- returns: {ret}
Use names, not ids, in the question. Start exploring with one ```python block."""


#: appended to the observation of an exploration program that ran, printed an answer of the
#: requested type and marked its evidence (``closing: hint``)
CLOSING_HINT: Final = (
    "This program printed an answer and marked its evidence. To finish, write only "
    "<question>...</question><answer>...</answer> for it (this program becomes the final program), "
    "or explore further with one ```python block."
)

#: the same, with ``closing: force``: the model's next turn starts with ``<question>``
CLOSING_FORCED: Final = (
    "This program printed an answer and marked its evidence: it is your final program, and what it "
    "printed is the answer. Now write the question it answers, using names, not ids: <question>...</question>"
)

#: appended when an exploration program repeats the previous one, which failed
REPEATED_NOTE: Final = "You ran this same program before and it failed the same way: change it."


def example_text(examples: Sequence[Any]) -> str:
    """Worked final turns on *this* graph (template-quizzer candidates: question, answer, the
    final program that proves it), or one generic example when there are none."""
    if not examples:
        return _GENERIC_EXAMPLE.replace("{{", "{").replace("}}", "}")
    blocks = ["Worked examples of final turns on this graph (write a NEW question, not one of these):"]
    for i, ex in enumerate(examples, 1):
        start = ex.start_node or {}
        blocks.append(
            f"Example {i} — start node (:{start.get('label')} {{id: {start.get('id')!r}}}) named "
            f'"{start.get("name")}", answer type {ex.answer_type}:\n```python\n{ex.final_program.strip()}\n```\n'
            f"<question>{ex.question}</question>\n<answer>{ex.answer}</answer>"
        )
    return "\n\n".join(blocks)


def system_prompt(schema: GraphSchema, *, max_turns: int, examples: Sequence[Any] = ()) -> str:
    """Tool rules, protocol, the schema with directions and property types, and worked examples
    made on this graph (:func:`example_text`)."""
    return _SYSTEM.format(schema=schema.to_text(counts=False), max_turns=max_turns, examples="{examples}").replace(
        "{examples}", example_text(examples)
    )


def task_message(axes: Axes, start: dict[str, Any], pk: str, neighbourhood_text: str) -> str:
    """The start node, its neighbourhood and the requested axes."""
    return _TASK.format(
        label=start["label"],
        pk=pk,
        id=start["id"],
        name=start["name"],
        neighbourhood=neighbourhood_text,
        answer_type=axes.answer_type,
        answer_format=ANSWER_FORMATS[axes.answer_type],
        pattern=PATTERN_TEXT[axes.question_pattern],
        difficulty=axes.difficulty,
        match=MATCH_TEXT[axes.match_family],
        ret=RETURN_TEXT[axes.return_family],
    )


def information_message(observation: str) -> str:
    """The environment's reply to an exploration turn."""
    return f"<information>{observation}</information>"


def repair_message(reason: str, detail: str | None, answer_type: str) -> str:
    """The one repair prompt: the failure and a request for a minimally fixed final turn."""
    return (
        f"<information>Your question failed the check: {reason}"
        + (f" ({detail[:400]})" if detail else "")
        + ".</information>\nFix it with the smallest change. Write the final turn again: one ```python block that "
        "runs the query with cypher(), computes answer, calls mark_evidence(result) and ends with print(answer); "
        f"then <question>...</question><answer>...</answer> (answer format: {ANSWER_FORMATS[answer_type]})."
    )
