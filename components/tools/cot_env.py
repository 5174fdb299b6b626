"""One Graph-CoT episode: the environment a GraphDancer-style policy talks to.

:class:`GraphCoTEnvironment` is shaped like TRL's ``environment_factory`` environments (one
instance per rollout, ``reset(**row)``, typed tool methods with docstrings) without depending on
TRL. It is driven in one of two ways:

* **Tag protocol** (GraphDancer): the policy writes ``<think>…</think><graph>F[…]</graph>`` or
  ``<think>…</think><answer>…</answer>``; :meth:`GraphCoTEnvironment.step` parses it
  (:func:`~components.tools.protocol.parse_step`), runs the call and returns the environment's
  reply ``"\\n\\n<information>…</information>\\n\\n"`` and whether the episode is over.
* **Tool calls** (TRL ``environment_factory``): :meth:`retrieve_node`, :meth:`node_feature`,
  :meth:`neighbour_check`, :meth:`node_degree` return the observation text; each call is one
  round. TRL exposes *every* public method of the class as a tool, so pass
  :func:`tool_environment_factory` (whose class has only ``reset`` and the four tools) to TRL,
  not this class.

**Rounds and the loop limit.** Every step is one round (a call, an invalid step, or the answer);
round indices start at 1. As in GraphDancer's generation loop (``max_turns`` tool turns, then one
final turn whose graph calls are not executed), the first ``max_rounds`` (``T_MAX`` = 10) rounds
are executed; after that the policy gets one more step in which only an ``<answer>`` counts —
anything else ends the episode as a **loop-limit halt** (``trace.halted``), unexecuted (recorded
with ``over_limit=True``; it counts as the halt L, not as a round N or an invalid call I). With
``final_answer_turn=False`` the episode halts right after the ``max_rounds``-th round instead.

**Trace.** :attr:`GraphCoTEnvironment.trace` (:class:`EpisodeTrace`) records every round: the
model text, the parsed step kind and reason, the :class:`~components.tools.graph_cot.GraphCall`
(function, args, observation, error, returned node ids), format/call validity, then the final
answer or the halt. It carries GraphDancer's counters: ``n_rounds`` (N), ``invalid_calls`` (I),
``halted`` (L), ``valid_format`` (VF) and the per-round returned node ids ``U_t``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from components.tools.env import (
    EPISODE_OVER,
    T_MAX,
    EpisodeTrace,
    ParsedStep,
    RoundLoop,
    RoundRecord,
    information_block,
    register_environment,
)
from components.tools.graph_cot import CallError, ErrorCode, GraphCall, GraphCoT, error_observation
from components.tools.protocol import GRAPH_FUNCTIONS, CallProblemCode, Step, StepKind, parse_step

__all__ = [
    "T_MAX",
    "EpisodeTrace",
    "GraphCoTEnvironment",
    "GraphCoTTools",
    "RoundRecord",
    "information_block",
    "render_prompt",
    "tool_environment_factory",
]

MALFORMED_OUTPUT = (
    "This is a malformed output. Expect <think>...</think><graph>...</graph> or final "
    "<think>...</think><answer>...</answer>."
)


# ---------------------------------------------------------------------------------------------
# Prompt
# ---------------------------------------------------------------------------------------------

_PROMPT = """\
Answer the question by exploring a graph, one step at a time. Each step is your reasoning inside \
<think>...</think> followed by exactly one graph function call inside <graph>...</graph>; the \
environment then replies inside <information>...</information>. When you know the answer, write \
<think>...</think><answer>...</answer> instead of a graph call. You have at most {max_rounds} graph calls.

Graph functions:
{functions}

Rules: reason only inside <think>; put nothing but one function call inside <graph>; never write \
<information> yourself; answer with the requested values (e.g. names), not node IDs. A node ID is \
written as returned by the functions (Label:id when an id exists under several labels). A \
neighbor_type is a relationship type (outgoing; prefix <- for incoming, e.g. <-CITES) or the label \
of the neighbouring nodes.

Graph definition:
{schema}
{examples}
Question: {question}"""


def render_prompt(question: str, schema_text: str, *, examples: str = "", max_rounds: int = T_MAX) -> str:
    """The task prompt: protocol, functions, rules, optional examples, schema, question."""
    functions = "\n".join(f"  {s.usage()}  ## {s.description}" for s in GRAPH_FUNCTIONS.values())
    block = f"\nHere are some examples:\n{examples}\n(END OF EXAMPLES)\n" if examples else ""
    return _PROMPT.format(
        max_rounds=max_rounds, functions=functions, schema=schema_text, examples=block, question=question
    )


# ---------------------------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------------------------

#: Which error (and so which Graph-CoT observation) an invalid call gets.
_INVALID_CALL_CODES: Mapping[CallProblemCode, ErrorCode] = {
    CallProblemCode.UNKNOWN_FUNCTION: ErrorCode.UNKNOWN_FUNCTION,
    CallProblemCode.BAD_ARGUMENTS: ErrorCode.BAD_ARGUMENTS,
    CallProblemCode.NOT_A_CALL: ErrorCode.NOT_A_CALL,
    CallProblemCode.MULTIPLE_CALLS: ErrorCode.NOT_A_CALL,
}


@register_environment("graph_cot")
class GraphCoTEnvironment(RoundLoop):
    """A Graph-CoT episode over one :class:`~components.tools.graph_cot.GraphCoT` API.

    The API (graph, index) is shared between environments; the episode state is per instance.
    """

    def __init__(
        self,
        api: GraphCoT,
        *,
        max_rounds: int = T_MAX,
        final_answer_turn: bool = True,
        require_think: bool = True,
        prompt_on_reset: bool = True,
        examples: str = "",
    ) -> None:
        super().__init__(max_rounds=max_rounds, final_answer_turn=final_answer_turn)
        self.api = api
        self.require_think = require_think
        self.prompt_on_reset = prompt_on_reset
        self.examples = examples

    # -- episode ---------------------------------------------------------------------------
    def reset(self, **row: Any) -> str:
        """Start a new episode for a dataset row; returns the task prompt for ``row["question"]``
        (``""`` when the row has no question or ``prompt_on_reset`` is off)."""
        self.start(row)
        question = row.get("question")
        if not self.prompt_on_reset or not isinstance(question, str):
            return ""
        return render_prompt(
            question, self.api.schema.to_text(counts=False), examples=self.examples, max_rounds=self.max_rounds
        )

    def parse(self, model_text: str) -> ParsedStep:
        step = parse_step(model_text, require_think=self.require_think)
        return ParsedStep(step.kind, step.reason, step.answer, step)

    def execute(self, parsed: ParsedStep) -> tuple[GraphCall | None, str, bool]:
        step: Step = parsed.payload
        if step.kind is StepKind.CALL and step.function is not None:
            call = self.api.call(step.function, step.args)
            return call, call.observation, True
        if step.kind is StepKind.INVALID_CALL:
            code = _INVALID_CALL_CODES.get(step.problem or CallProblemCode.NOT_A_CALL, ErrorCode.NOT_A_CALL)
            observation = error_observation(code, step.function)
            return (
                GraphCall(step.function or "", (), observation, CallError(code, step.reason or "")),
                observation,
                False,
            )
        return None, MALFORMED_OUTPUT, False

    # -- tools (one round each) ------------------------------------------------------------
    def _tool(self, function: str, *args: str) -> str:
        if self.trace.done:
            return EPISODE_OVER
        if self._in_final_turn():
            self._record(RoundRecord(self.rounds_used + 1, None, StepKind.CALL, "loop limit reached", over_limit=True))
            self._halt()
            return EPISODE_OVER
        call = self.api.call(function, args)
        self._record(RoundRecord(self.rounds_used + 1, None, StepKind.CALL, None, call, call.observation, True))
        return call.observation

    def retrieve_node(self, text: str) -> str:
        """Find the graph node that best matches a text, such as a name or a title.

        Args:
            text: Words describing the node to find, e.g. a person's name or a paper title.

        Returns:
            A sentence giving the ID of the best-matching node (or IDs, best first).
        """
        return self._tool("RetrieveNode", text)

    def node_feature(self, node_id: str, feature: str) -> str:
        """Read one attribute (property) of a node.

        Args:
            node_id: The node's ID, exactly as returned by another function.
            feature: The attribute name, e.g. "name" or "year".

        Returns:
            A sentence giving the attribute's value.
        """
        return self._tool("NodeFeature", node_id, feature)

    def neighbour_check(self, node_id: str, neighbor_type: str) -> str:
        """List a node's neighbours of one type.

        Args:
            node_id: The node's ID, exactly as returned by another function.
            neighbor_type: A relationship type (outgoing; prefix "<-" for incoming) or the label of the neighbouring nodes.

        Returns:
            A sentence listing the neighbours' IDs.
        """
        return self._tool("NeighborCheck", node_id, neighbor_type)

    def node_degree(self, node_id: str, neighbor_type: str) -> str:
        """Count a node's neighbours of one type.

        Args:
            node_id: The node's ID, exactly as returned by another function.
            neighbor_type: A relationship type (outgoing; prefix "<-" for incoming) or the label of the neighbouring nodes.

        Returns:
            A sentence giving the number of neighbours.
        """
        return self._tool("NodeDegree", node_id, neighbor_type)


class GraphCoTTools:
    """The TRL-facing view of an episode: exactly ``reset`` and the four tools are public.

    TRL lists an environment's public functions as tools, so the episode's ``step`` and trace
    live on the wrapped :class:`GraphCoTEnvironment` (``.episode``), not here.
    """

    def __init__(self, episode: GraphCoTEnvironment) -> None:
        self._episode = episode

    @property
    def episode(self) -> GraphCoTEnvironment:
        return self._episode

    def reset(self, **row: Any) -> str | None:
        """Start an episode; returns the prompt text to append (``None`` when there is none)."""
        return self._episode.reset(**row) or None

    def retrieve_node(self, text: str) -> str:
        """Find the graph node that best matches a text, such as a name or a title.

        Args:
            text: Words describing the node to find, e.g. a person's name or a paper title.
        """
        return self._episode.retrieve_node(text)

    def node_feature(self, node_id: str, feature: str) -> str:
        """Read one attribute (property) of a node.

        Args:
            node_id: The node's ID, exactly as returned by another function.
            feature: The attribute name, e.g. "name" or "year".
        """
        return self._episode.node_feature(node_id, feature)

    def neighbour_check(self, node_id: str, neighbor_type: str) -> str:
        """List a node's neighbours of one type.

        Args:
            node_id: The node's ID, exactly as returned by another function.
            neighbor_type: A relationship type (outgoing; prefix "<-" for incoming) or the label of the neighbouring nodes.
        """
        return self._episode.neighbour_check(node_id, neighbor_type)

    def node_degree(self, node_id: str, neighbor_type: str) -> str:
        """Count a node's neighbours of one type.

        Args:
            node_id: The node's ID, exactly as returned by another function.
            neighbor_type: A relationship type (outgoing; prefix "<-" for incoming) or the label of the neighbouring nodes.
        """
        return self._episode.node_degree(node_id, neighbor_type)


def tool_environment_factory(api: GraphCoT, **options: Any) -> Callable[[], GraphCoTTools]:
    """A zero-argument factory for TRL's ``environment_factory`` (one instance per rollout).

    ``options`` go to :class:`GraphCoTEnvironment` (``prompt_on_reset`` defaults to False here:
    the dataset's prompt usually carries the question already).
    """
    opts: Mapping[str, Any] = {"prompt_on_reset": False, **options}
    return lambda: GraphCoTTools(GraphCoTEnvironment(api, **opts))
