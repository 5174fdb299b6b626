"""GraphDancer's tag protocol: parse one model step, never raise.

A step is ``<think>…</think>`` followed by exactly one of

* ``<graph>Function[args]</graph>`` — one graph function call (the environment then answers in
  ``<information>…</information>``), or
* ``<answer>…</answer>`` — the final answer (the episode ends).

:func:`parse_step` classifies any text into a :class:`Step` of one of four kinds
(:class:`StepKind`): ``call`` (a well-formed step with a known function and the right number of
arguments), ``answer``, ``invalid_format`` (the tag structure is wrong) and ``invalid_call`` (the
structure is right but the ``<graph>`` content is not one known ``Function[args]``), with a
one-line ``reason`` for the invalid ones. It never raises, whatever the input (``None``, empty,
huge, binary-looking, unbalanced).

**Tag structure** (``invalid_format`` otherwise). Only whitespace may appear outside the blocks;
blocks do not nest; every opened tag is closed; ``<information>`` is never written by the model;
the blocks are exactly ``think`` then ``graph`` or ``think`` then ``answer`` (with
``require_think=False`` the ``think`` block is optional, but at most one). Tags are the exact
lowercase ``<think>``, ``<graph>``, ``<answer>``, ``<information>`` and their closing forms.

**Call syntax** (``invalid_call`` otherwise). The ``<graph>`` content, stripped, is
``Name[ … ]`` where ``Name`` is a function of :data:`GRAPH_FUNCTIONS` (exact spelling;
``NeighbourCheck`` is accepted for ``NeighborCheck``) and the brackets enclose the arguments. A
second call in the same block (``NodeFeature[a, b] NodeDegree[a, c]``) is refused.

**Arguments** (:func:`split_arguments`). Items are separated by commas; an item wholly enclosed in
matching single or double quotes is unquoted (a backslash escapes the quote character or a
backslash inside), and commas inside quotes do not separate. Whitespace around items is dropped.

* A one-argument function (``RetrieveNode``) takes the *whole* bracket content as its argument —
  ``RetrieveNode[Smith, John]`` searches for ``"Smith, John"`` — unquoted when it is one quoted
  string.
* A two-argument function whose unquoted content has more than one comma splits at the **last**
  comma: the second argument (a feature name or neighbour type) is a schema name and never
  contains a comma, so the extra commas belong to the node id
  (``NodeFeature[Smith, John, name]`` → ``("Smith, John", "name")``).

>>> parse_step("<think>find Ann</think><graph>RetrieveNode[Ann]</graph>").call
('RetrieveNode', ('Ann',))
>>> parse_step("<think>ok</think>\\n<answer>Paris</answer>").answer
'Paris'
>>> parse_step("<graph>NodeDegree[ann]</graph>").reason
'missing <think> block before <graph>'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "FUNCTION_ALIASES",
    "GRAPH_FUNCTIONS",
    "CallProblem",
    "CallProblemCode",
    "FunctionSignature",
    "Step",
    "StepKind",
    "canonical_function",
    "format_call",
    "parse_call",
    "parse_step",
    "split_arguments",
]


@dataclass(frozen=True)
class FunctionSignature:
    """A graph function's name, parameter names and a one-line description (for prompts)."""

    name: str
    params: tuple[str, ...]
    description: str

    @property
    def arity(self) -> int:
        return len(self.params)

    def usage(self) -> str:
        return f"{self.name}[{', '.join(self.params)}]"


#: The Graph-CoT function vocabulary (GraphDancer Table 8), by canonical name.
GRAPH_FUNCTIONS: Mapping[str, FunctionSignature] = {
    s.name: s
    for s in (
        FunctionSignature(
            "RetrieveNode", ("keyword",), "retrieves the related node from the graph according to the query"
        ),
        FunctionSignature(
            "NodeFeature",
            ("node_id", "feature"),
            'returns detailed attribute information of Node for the given "feature" key',
        ),
        FunctionSignature(
            "NodeDegree",
            ("node_id", "neighbor_type"),
            'returns the number of "neighbor_type" neighbors of Node',
        ),
        FunctionSignature(
            "NeighborCheck",
            ("node_id", "neighbor_type"),
            'lists the "neighbor_type" neighbors of Node and returns them',
        ),
    )
}

#: Other accepted spellings -> canonical name (Graph-CoT's code spells ``NeighbourCheck``).
FUNCTION_ALIASES: Mapping[str, str] = {"NeighbourCheck": "NeighborCheck"}


def canonical_function(name: str) -> str | None:
    """The canonical function name for an accepted spelling, else ``None``."""
    if name in GRAPH_FUNCTIONS:
        return name
    return FUNCTION_ALIASES.get(name)


class StepKind(StrEnum):
    CALL = "call"
    ANSWER = "answer"
    INVALID_FORMAT = "invalid_format"
    INVALID_CALL = "invalid_call"


class CallProblemCode(StrEnum):
    NOT_A_CALL = "not_a_call"
    UNKNOWN_FUNCTION = "unknown_function"
    BAD_ARGUMENTS = "bad_arguments"
    MULTIPLE_CALLS = "multiple_calls"


@dataclass(frozen=True)
class Step:
    """One parsed model step.

    ``function``/``args`` are set for ``call`` (canonical name, parsed arguments);
    ``function`` is also set for an ``invalid_call`` whose function was recognised;
    ``raw_call`` holds the ``<graph>`` content whenever one was found; ``answer`` is set for
    ``answer``; ``reason`` explains ``invalid_format`` and ``invalid_call``, and ``problem``
    classifies an ``invalid_call`` (:class:`CallProblemCode`).
    """

    kind: StepKind
    think: str | None = None
    raw_call: str | None = None
    function: str | None = None
    args: tuple[str, ...] = ()
    answer: str | None = None
    reason: str | None = None
    problem: CallProblemCode | None = None

    @property
    def valid_format(self) -> bool:
        """The tag structure was right (a call may still be invalid)."""
        return self.kind is not StepKind.INVALID_FORMAT

    @property
    def call(self) -> tuple[str, tuple[str, ...]] | None:
        return (self.function, self.args) if self.kind is StepKind.CALL and self.function else None


# ---------------------------------------------------------------------------------------------
# Tags
# ---------------------------------------------------------------------------------------------

_TAG = re.compile(r"<(/?)(think|graph|answer|information)>")
_MODEL_BLOCKS = ("think", "graph", "answer")


@dataclass(frozen=True)
class _Block:
    name: str
    content: str


def _preview(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _blocks(text: str) -> tuple[list[_Block], str | None]:
    """Split into top-level blocks, or give the first structural problem."""
    blocks: list[_Block] = []
    open_name: str | None = None
    open_end = 0
    pos = 0  # end of the last closed block (or start)
    for m in _TAG.finditer(text):
        closing, name = m.group(1) == "/", m.group(2)
        if open_name is None:
            between = text[pos : m.start()]
            if between.strip():
                return blocks, f"text outside tags: {_preview(between)}"
            if closing:
                return blocks, f"unexpected </{name}> without <{name}>"
            if name == "information":
                return blocks, "<information> is written by the environment, never by the model"
            open_name, open_end = name, m.end()
        elif closing and name == open_name:
            blocks.append(_Block(name, text[open_end : m.start()]))
            open_name, pos = None, m.end()
        elif closing:
            return blocks, f"</{name}> closes an open <{open_name}>"
        else:
            return blocks, f"<{name}> nested inside <{open_name}>"
    if open_name is not None:
        return blocks, f"unclosed <{open_name}>"
    rest = text[pos:]
    if rest.strip():
        where = f"after </{blocks[-1].name}>" if blocks else "outside tags"
        return blocks, f"text {where}: {_preview(rest)}"
    return blocks, None


def _sequence_problem(names: list[str], require_think: bool) -> str | None:
    if not names:
        return "no <think>, <graph> or <answer> block"
    counts = {n: names.count(n) for n in _MODEL_BLOCKS}
    if counts["graph"] > 1:
        return f"{counts['graph']} <graph> blocks: issue exactly one function per step"
    if counts["answer"] > 1:
        return f"{counts['answer']} <answer> blocks"
    if counts["graph"] and counts["answer"]:
        return "both <graph> and <answer> in one step"
    if counts["think"] > 1:
        return f"{counts['think']} <think> blocks: reason once, before the action"
    action = "graph" if counts["graph"] else "answer" if counts["answer"] else None
    if action is None:
        return "no <graph> or <answer> after <think>"
    if names[-1] != action:
        return f"<think> after <{action}>: reason before the action"
    if require_think and names[0] != "think":
        return f"missing <think> block before <{action}>"
    return None


# ---------------------------------------------------------------------------------------------
# Calls and arguments
# ---------------------------------------------------------------------------------------------

_NAME = re.compile(r"\s*([A-Za-z_]\w*)\s*\[")
_NEXT_CALL = re.compile(r"\s*[,;]?\s*[A-Za-z_]\w*\s*\[")
_QUOTES = "'\""


def _scan_items(inner: str) -> tuple[list[str], bool] | None:
    """Comma-separated items of ``inner`` with quotes respected.

    Returns ``(items, all_closed)``: the raw (still quoted) items, and whether every quote was
    closed. ``None`` when a bracket closes that was never opened outside quotes.
    """
    items: list[str] = []
    start = 0
    quote: str | None = None
    escaped = False
    depth = 0
    for i, ch in enumerate(inner):
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in _QUOTES and not inner[start:i].strip():
            quote = ch  # a quote opens only at the start of an item
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                return None
        elif ch == "," and depth == 0:
            items.append(inner[start:i])
            start = i + 1
    items.append(inner[start:])
    return items, quote is None


def _unquote(item: str) -> str:
    s = item.strip()
    if len(s) >= 2 and s[0] in _QUOTES and s[-1] == s[0]:
        body, q = s[1:-1], s[0]
        out: list[str] = []
        i = 0
        while i < len(body):
            ch = body[i]
            if ch == "\\" and i + 1 < len(body) and body[i + 1] in (q, "\\"):
                out.append(body[i + 1])
                i += 2
                continue
            if ch == q:  # an unescaped inner quote: not one quoted string, keep as written
                return s
            out.append(ch)
            i += 1
        return "".join(out)
    return s


def split_arguments(inner: str, arity: int) -> tuple[str, ...]:
    """Split a call's bracket content into ``arity`` arguments (see the module docstring).

    Returns fewer or more items than ``arity`` only when the content cannot be read as that
    many arguments (the caller reports the mismatch).

    >>> split_arguments('"Smith, John", name', 2)
    ('Smith, John', 'name')
    >>> split_arguments("Smith, John, name", 2)
    ('Smith, John', 'name')
    >>> split_arguments("graph neural networks, 2021", 1)
    ('graph neural networks, 2021',)
    """
    text = inner.strip()
    if arity == 1:
        return (_unquote(text),) if text else ()
    scanned = _scan_items(text)
    if scanned is None or not scanned[1]:
        # Unbalanced brackets or quotes: fall back to plain commas.
        items = text.split(",")
    else:
        items = scanned[0]
    if not text:
        return ()
    if len(items) > arity:
        head = ",".join(items[: len(items) - arity + 1])
        items = [head, *items[len(items) - arity + 1 :]]
    return tuple(_unquote(it) for it in items)


_NEEDS_QUOTES = re.compile(r"[,\[\]'\"\\]|^\s|\s$")


def _quote(arg: str) -> str:
    if not arg or _NEEDS_QUOTES.search(arg):
        return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return arg


def format_call(function: str, args: Sequence[str]) -> str:
    """Write a call so that :func:`parse_call` reads back exactly ``(function, args)``: an
    argument with a comma, bracket, quote, backslash or surrounding space is double-quoted.

    >>> format_call("NodeFeature", ["Smith, John", "name"])
    'NodeFeature["Smith, John", name]'
    """
    return f"{function}[{', '.join(_quote(a) for a in args)}]"


def _call_extent(content: str, open_at: int) -> int | None:
    """Index of the ``]`` matching the ``[`` at ``open_at`` (quotes respected), or ``None``."""
    depth = 0
    quote: str | None = None
    escaped = False
    item_start = open_at + 1
    for i in range(open_at, len(content)):
        ch = content[i]
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in _QUOTES and not content[item_start:i].strip():
            quote = ch
        elif ch == ",":
            item_start = i + 1
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return i
    return None


@dataclass(frozen=True)
class CallProblem:
    """Why a ``<graph>`` block is not a valid call: a stable ``code`` and a one-line reason."""

    code: CallProblemCode
    reason: str
    function: str | None = None  # canonical name, when the function was recognised


def _parse_call(content: str) -> tuple[str, tuple[str, ...]] | CallProblem:
    m = _NAME.match(content)
    if m is None:
        return CallProblem(CallProblemCode.NOT_A_CALL, f"expected Function[arguments], got {_preview(content)}")
    raw_name = m.group(1)
    name = canonical_function(raw_name)
    if name is None:
        known = ", ".join(s.usage() for s in GRAPH_FUNCTIONS.values())
        return CallProblem(
            CallProblemCode.UNKNOWN_FUNCTION, f"unknown function {raw_name!r}; valid functions are {known}"
        )
    body = content.rstrip()
    open_at = m.end() - 1
    close_at = _call_extent(body, open_at)
    if close_at is not None and close_at != len(body) - 1:
        if _NEXT_CALL.match(body, close_at + 1):
            return CallProblem(
                CallProblemCode.MULTIPLE_CALLS,
                "more than one function call in <graph>: issue exactly one function per step",
                name,
            )
        if not body.endswith("]"):
            return CallProblem(
                CallProblemCode.NOT_A_CALL, f"text after the call: {_preview(body[close_at + 1 :])}", name
            )
        close_at = len(body) - 1  # an unquoted ']' inside an argument: take the outer pair
    if close_at is None:
        if not body.endswith("]"):
            return CallProblem(CallProblemCode.NOT_A_CALL, f"unclosed '[' in {raw_name}[...]", name)
        close_at = len(body) - 1
    signature = GRAPH_FUNCTIONS[name]
    args = split_arguments(body[open_at + 1 : close_at], signature.arity)
    if len(args) != signature.arity or any(not a for a in args):
        plural = "s" if signature.arity > 1 else ""
        return CallProblem(
            CallProblemCode.BAD_ARGUMENTS,
            f"{raw_name} takes {signature.arity} argument{plural}: {signature.usage()}",
            name,
        )
    return name, args


def parse_call(content: str) -> tuple[str, tuple[str, ...]] | str:
    """``(canonical function, args)`` for a ``<graph>`` block's content, or a reason string."""
    parsed = _parse_call(content)
    return parsed.reason if isinstance(parsed, CallProblem) else parsed


# ---------------------------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------------------------


def _parse(text: str, require_think: bool) -> Step:
    blocks, problem = _blocks(text)
    if problem is None:
        problem = _sequence_problem([b.name for b in blocks], require_think)
    by_name: dict[str, str] = {}
    for b in blocks:  # the first block of each kind
        by_name.setdefault(b.name, b.content)
    think = by_name.get("think")
    if problem is not None:
        return Step(StepKind.INVALID_FORMAT, think=think, raw_call=by_name.get("graph"), reason=problem)
    if "answer" in by_name:
        answer = by_name["answer"].strip()
        if not answer:
            return Step(StepKind.INVALID_FORMAT, think=think, reason="empty <answer>")
        return Step(StepKind.ANSWER, think=think, answer=answer)
    raw = by_name["graph"].strip()
    parsed = _parse_call(raw)
    if isinstance(parsed, CallProblem):
        return Step(
            StepKind.INVALID_CALL,
            think=think,
            raw_call=raw,
            function=parsed.function,
            reason=parsed.reason,
            problem=parsed.code,
        )
    name, args = parsed
    return Step(StepKind.CALL, think=think, raw_call=raw, function=name, args=args)


def parse_step(text: object, *, require_think: bool = True) -> Step:
    """Classify one model step (see the module docstring). Never raises."""
    if not isinstance(text, str):
        return Step(StepKind.INVALID_FORMAT, reason=f"expected text, got {type(text).__name__}")
    try:
        return _parse(text, require_think)
    except Exception as exc:  # a parser bug must not crash a rollout: report it as a format error
        return Step(StepKind.INVALID_FORMAT, reason=f"unparseable step ({type(exc).__name__})")
