"""The LLM Quizzer (GraphCert): a model explores the graph through the sandbox and writes a
question, its answer and the final program that proves it.

Per episode: sample the axes (:func:`~components.quizzer.axes.sample_axes`) and a start node with
its 1-hop neighbourhood; prompt with the schema (directions, property types), the tool rules and
output protocol (:mod:`components.quizzer.prompts`), ``few_shot`` worked examples made by the
template quizzer on **this** graph (never another domain's) and the neighbourhood; then loop, at
most ``max_turns`` turns:

* an exploration turn (one ```` ```python ```` block) runs in the episode's persistent sandbox
  and the observation goes back as ``<information>…</information>`` — with the query path's own
  errors (unknown label / property with suggestions, refused constructs) and a note for every
  relationship pattern whose direction is not in the schema (such a query returns nothing
  instead of failing);
* the final turn (a code block plus ``<question>…</question><answer>…</answer>``) is checked:
  the code runs as the *final program* in a **fresh** sandbox
  (:func:`~components.quizzer.final.run_final_program`); it must mark evidence and print an answer
  that parses as the requested answer type and agrees with the stated one; its evidence queries
  must follow the schema's directed triples;
* a **closing turn** — only ``<question>…</question><answer>…</answer>``, right after an exploration
  program that ran, printed a value and marked its evidence (the observation says so) — makes that
  program the final program, checked in a fresh sandbox exactly as above (so it must be
  self-contained). Small models explore correctly and then write the tags without repeating the
  code; without this they failed as ``no_final_code`` (the trace records ``kind: closing``).

A final turn whose evidence repeats a worked example — the same query structure
(:func:`~components.rubric.evidence.s_pair` = 1) *and* the same entities — fails as
``copied_example``: a model that copies its examples has learned nothing.

A failed episode gets **one** repair turn (the failure reason and a request for a minimal fix of
the QA and regenerated evidence); the candidate records ``repaired=True`` when that succeeds.
Every outcome — garbage, empty, endless (``max_new_tokens``) or tag-less output, code that
crashes or times out, refused or schema-invalid queries, a backend exception — is a
:class:`~components.quizzer.candidate.QACandidate` with a ``failure_reason``; nothing raises.

**Batching.** :meth:`LLMQuizzer.generate` runs ``n`` episodes together: turn ``k`` of every
episode still running is one ``backend.generate`` call, and so is the repair turn of every
failed episode. Sampling seeds derive from the quizzer seed and the turn, so a fixed seed on a
deterministic backend reproduces the candidates.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final

import numpy as np

from components.graph.errors import GraphError
from components.graph.schema import GraphSchema
from components.graph.schema import quote_identifier as q
from components.llm.base import (
    Generation,
    GenerationBackend,
    SamplingParams,
)
from components.quizzer.answers import parse_printed
from components.quizzer.axes import Axes, sample_axes
from components.quizzer.candidate import QACandidate, candidate_id, format_answer
from components.quizzer.context import (
    StartNode,
    display_property,
    neighbourhood,
    neighbourhood_text,
    sample_node,
)
from components.quizzer.final import (
    AnswerParseError,
    answer_in_rows,
    answers_agree,
    direction_errors,
    parse_answer,
    run_final_program,
)
from components.quizzer.prompts import (
    CLOSING_FORCED,
    CLOSING_HINT,
    REPEATED_NOTE,
    information_message,
    repair_message,
    system_prompt,
    task_message,
)
from components.tools.sandbox import SandboxEpisode, SandboxLimits

__all__ = ["LLMQuizzer", "LLMQuizzerConfig", "ParsedTurn", "parse_turn", "worked_examples"]

_CODE: Final = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
#: a question ends at its closing tag or, when the model forgot it, where the answer tag opens
_QUESTION: Final = re.compile(r"<question>(.*?)(?:</question>|(?=<answer>))", re.DOTALL)
_ANSWER: Final = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_OPEN_TAG: Final = re.compile(r"<(question|answer)>", re.DOTALL)
_NO_REPAIR: Final = frozenset({"no_start_node", "backend_error"})
CLOSING_MODES: Final = frozenset({"force", "hint"})
#: the start of the model's turn after an exploration program it must close on (``closing: force``)
CLOSING_PREFIX: Final = "<question>"
#: the start of the model's first turn and of its repair turn (``code_first``): a program comes first
CODE_PREFIX: Final = "```python\n"


@dataclass(frozen=True)
class LLMQuizzerConfig:
    """Loop budget and sampling. ``max_turns`` counts exploration and final turns (the repair
    turn comes on top, and so does a closing turn owed after the last exploration turn).

    ``closing`` — what follows an exploration program that ran, printed an answer of the requested
    type and marked its evidence: ``"force"`` (the default) makes it the final program, starts the
    model's next turn with ``<question>`` and ends it at ``</question>`` — the model writes the
    question, the answer is what the program printed
    (:data:`~components.quizzer.prompts.CLOSING_FORCED`); ``"hint"`` only tells the model it may
    close (:data:`~components.quizzer.prompts.CLOSING_HINT`) and lets it explore on. Measured in
    ``docs/benchmarks.md``: small models given the hint explore again instead of closing, and
    asked for both tags state answers their program did not print.
    """

    max_turns: int = 4
    max_new_tokens: int = 384
    temperature: float = 0.7
    top_p: float = 0.95
    top_k: int = 0
    repair: bool = True
    preview_rows: int = 5
    observation_chars: int = 2000
    answer_types: tuple[str, ...] | None = None  # restrict the axis draws (None: all)
    difficulties: tuple[str, ...] | None = None
    few_shot: int = 3  # worked examples from the template quizzer on this graph (0: a generic one)
    closing: str = "force"  # "force" | "hint"
    closing_new_tokens: int = 160  # budget of a forced closing turn (the question only)
    #: start the first turn and the repair turn with a ```python block: a program comes before
    #: any question (small models otherwise answer from the neighbourhood with no program)
    code_first: bool = True

    def __post_init__(self) -> None:
        if self.closing not in CLOSING_MODES:
            raise ValueError(f"llm quizzer closing must be one of {sorted(CLOSING_MODES)}, got {self.closing!r}")
        if self.max_turns < 1 or self.max_new_tokens < 1 or self.closing_new_tokens < 1:
            raise ValueError("llm quizzer max_turns, max_new_tokens and closing_new_tokens must be >= 1")


_QUOTED_NAME: Final = re.compile(r'"([^"]+)"')
_NUMBER: Final = re.compile(r"[-+]?\d+(?:[.,]\d+)*")
_LITERAL: Final = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")


def _entities(evidence: list[dict[str, Any]]) -> frozenset[str]:
    """The entities a candidate's evidence names: every scalar parameter value and every quoted
    literal of its queries."""
    out: set[str] = set()
    for e in evidence:
        for value in (e.get("params") or {}).values():
            values = value if isinstance(value, list) else [value]
            out.update(str(v) for v in values if isinstance(v, (str, int, float, bool)))
        out.update(a or b for a, b in _LITERAL.findall(str(e.get("query", ""))))
    return frozenset(out)


def worked_examples(query_path: Any, schema: GraphSchema, k: int, *, seed: int = 0) -> list[QACandidate]:
    """Up to ``k`` template-quizzer candidates on this graph to show the LLM Quizzer as worked
    final turns: certified-style programs (their answers computed in Cypher, evidence marked),
    one per answer type while the types last, from a seed of their own (so they are not the
    template candidates of the same run)."""
    if k <= 0:
        return []
    from components.quizzer.template import TemplateQuizzer

    made = [c for c in TemplateQuizzer(query_path, schema, seed=seed + 104_729).generate(8 * k) if c.ok]
    picked: list[QACandidate] = []
    for c in made:  # one per answer type first, then whatever is left
        if c.answer_type not in {p.answer_type for p in picked}:
            picked.append(c)
    picked += [c for c in made if c not in picked]
    return picked[:k]


@dataclass(frozen=True)
class ParsedTurn:
    kind: str  # "explore" | "final" | "invalid" | "empty"
    code: str | None = None
    question: str | None = None
    answer: str | None = None
    reason: str | None = None


def parse_turn(text: str) -> ParsedTurn:
    """Classify one model turn under the output protocol (see :mod:`components.quizzer.prompts`).

    >>> parse_turn("```python\\nprint(1)\\n```").kind
    'explore'
    >>> parse_turn("```python\\nprint(1)\\n```<question>Q?</question><answer>A</answer>").kind
    'final'
    >>> parse_turn("hello").reason
    'no_code'
    >>> parse_turn("<question>Who?\\n<answer>Ann</answer>").question  # a forgotten </question>
    'Who?'
    """
    if not isinstance(text, str) or not text.strip():
        return ParsedTurn("empty", reason="empty_output")
    codes = [c for c in _CODE.findall(text) if c.strip()]
    questions, answers = _QUESTION.findall(text), _ANSWER.findall(text)
    if questions or answers or _OPEN_TAG.search(text):
        code = codes[-1] if codes else None
        q = questions[-1].strip() if questions else None
        a = answers[-1].strip() if answers else None
        if code is None:
            return ParsedTurn("final", None, q, a, "no_final_code")
        if not q or a is None:
            return ParsedTurn("final", code, q, a, "missing_tags")
        return ParsedTurn("final", code, q, a)
    if len(codes) == 1:
        return ParsedTurn("explore", codes[0])
    if len(codes) > 1:
        return ParsedTurn("invalid", reason="multiple_code_blocks")
    return ParsedTurn("invalid", reason="no_code")


@dataclass
class _Episode:
    index: int
    cand: QACandidate
    axes: Axes | None
    messages: list[dict[str, str]] = field(default_factory=list)
    sandbox: SandboxEpisode | None = None
    done: bool = False
    turns: int = 0
    last_issue: str | None = None
    #: the last exploration program that ran, printed an answer of the requested type and marked
    #: its evidence: the closing turn after it makes it the final program
    program: str | None = None
    program_turn: int | None = None
    printed: str | None = None  # that program's answer, formatted
    #: ``closing: force``: the next turn starts with :data:`CLOSING_PREFIX` (it closes on ``program``)
    closing_due: bool = False
    prefix: str = ""  # the assistant prefix the pending turn was started with
    #: the last exploration program and whether it failed (a repeat of a failed one is pointed out)
    last_code: str | None = None
    last_failed: bool = False
    started: float = field(default_factory=time.perf_counter)

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None


class LLMQuizzer:
    """GraphCert's LLM Quizzer over a :class:`~components.llm.base.GenerationBackend`."""

    kind = "llm"

    def __init__(
        self,
        query_path: Any,
        schema: GraphSchema,
        backend: GenerationBackend,
        *,
        seed: int = 0,
        limits: SandboxLimits | None = None,
        config: LLMQuizzerConfig | None = None,
    ) -> None:
        self.query_path, self.schema, self.backend = query_path, schema, backend
        self.seed = seed
        self.limits = limits if limits is not None else SandboxLimits()
        self.config = config if config is not None else LLMQuizzerConfig()
        self.examples = worked_examples(query_path, schema, self.config.few_shot, seed=seed)
        self._system = system_prompt(schema, max_turns=self.config.max_turns, examples=self.examples)

    # -- setup ---------------------------------------------------------------------------
    def _episode(self, index: int) -> _Episode:
        rng = np.random.default_rng([self.seed, index])
        axes = sample_axes(rng, answer_types=self.config.answer_types, difficulties=self.config.difficulties)
        cand = QACandidate(
            id=candidate_id(self.seed, index, self.kind),
            quizzer=self.kind,
            seed=self.seed,
            index=index,
            answer_type=axes.answer_type,
            axes=axes.to_dict(),
            model=str(getattr(self.backend, "model_name", "")),
        )
        ep = _Episode(index, cand, axes)
        start: StartNode | None = sample_node(self.query_path, self.schema, rng)
        if start is None:
            cand.fail("no_start_node")
            ep.done = True
            return ep
        nb = neighbourhood(self.query_path, self.schema, start)
        cand.start_node, cand.neighbourhood = start.to_dict(), nb
        pk = self.schema.labels[start.label].primary_key
        ep.messages = [
            {"role": "system", "content": self._system},
            {"role": "user", "content": task_message(axes, start.to_dict(), pk, neighbourhood_text(nb))},
        ]
        return ep

    def _prefix(self, ep: _Episode, *, repair: bool = False) -> str:
        """How the model's next turn in ``ep`` starts (an assistant prefix the backend continues):
        :data:`CLOSING_PREFIX` when a closing is due, :data:`CODE_PREFIX` for the first and the
        repair turn with ``code_first``, else nothing."""
        if ep.closing_due:
            return CLOSING_PREFIX
        return CODE_PREFIX if self.config.code_first and (ep.turns == 0 or repair) else ""

    def _params(self, turn: int, *, closing: bool = False) -> SamplingParams:
        c = self.config
        return SamplingParams(
            max_new_tokens=c.closing_new_tokens if closing else c.max_new_tokens,
            temperature=c.temperature,
            top_p=c.top_p,
            top_k=c.top_k,
            stop=("</question>",) if closing else ("</answer>",),
            seed=self.seed * 1_000_003 + turn * 7919,
        )

    def _call(self, eps: list[_Episode], turn: int, *, prefix: str = "") -> list[Generation | None]:
        """One batched generation for ``eps``; a backend failure fails those episodes. With a
        ``prefix`` every conversation ends with that assistant prefix, which the backend continues
        (:meth:`_prefix`; each episode remembers it for :meth:`_step`)."""
        if not eps:
            return []
        start = [{"role": "assistant", "content": prefix}] if prefix else []
        for ep in eps:
            ep.prefix = prefix
        t0 = time.perf_counter()
        try:
            params = self._params(turn, closing=prefix == CLOSING_PREFIX)
            outs = self.backend.generate([[*ep.messages, *start] for ep in eps], params)
        except Exception as exc:  # noqa: BLE001 - recorded, never raised
            for ep in eps:
                ep.cand.fail("backend_error", f"{type(exc).__name__}: {exc}")
                ep.done = True
            return [None] * len(eps)
        wall = time.perf_counter() - t0
        gens: list[Generation | None] = []
        for ep, out in zip(eps, outs):
            gen = out[0] if out else None
            if gen is not None:
                ep.cand.prompt_tokens += int(gen.prompt_tokens)
                ep.cand.completion_tokens += int(gen.completion_tokens)
            ep.cand.latency_s += gen.latency_s if gen is not None and gen.latency_s else wall
            gens.append(gen)
        return gens

    # -- turns ---------------------------------------------------------------------------
    @staticmethod
    def _text(gen: Generation | None) -> tuple[str, str]:
        if gen is None:
            return "", "none"
        text = gen.text if isinstance(gen.text, str) else ""
        if gen.stop_reason in ("</answer>", "</question>"):
            text += gen.stop_reason
        return text, gen.stop_reason

    def _step(self, ep: _Episode, gen: Generation | None, *, repair: bool = False) -> None:
        text, stop = self._text(gen)
        prefix, ep.prefix, ep.closing_due = ep.prefix, "", False
        forced = prefix == CLOSING_PREFIX
        if text.strip() or forced:  # the turn began with the prefix the backend continued
            text = prefix + text
        ep.turns += 1
        ep.messages.append({"role": "assistant", "content": text})
        turn = parse_turn(text)
        record: dict[str, Any] = {
            "turn": ep.turns,
            "repair": repair,
            "model_text": text,
            "stop_reason": stop,
            "kind": turn.kind,
            "reason": turn.reason,
        }
        if prefix:
            record["prefix"] = prefix
        ep.cand.trace.append(record)
        if forced:
            # a forced closing turn: the model wrote the question the program answers; the
            # answer is what the program printed (the program is re-run alone in _final)
            question = text.removeprefix(CLOSING_PREFIX).split("</question>")[0].strip()
            ok = question and stop != "length" and "<" not in question
            turn = ParsedTurn("final", ep.program, question or None, ep.printed, None if ok else "missing_tags")
            record.update(kind="closing", reason=turn.reason, program_from_turn=ep.program_turn, answer_from="program")
        elif turn.kind == "final" and turn.reason == "no_final_code" and ep.program is not None:
            # a closing turn: the question and answer for the program the model just ran
            closing = ParsedTurn("final", ep.program, turn.question, turn.answer)
            turn = closing if turn.question and turn.answer is not None else replace(closing, reason="missing_tags")
            record.update(kind="closing", reason=turn.reason, program_from_turn=ep.program_turn)
        if turn.kind == "final":
            self._final(ep, turn, record)
            ep.done = True
            return
        if repair and (turn.kind != "explore" or self.config.closing != "force"):
            # the repair turn must be a final turn (or, with forced closing, a program to close on)
            ep.cand.fail(turn.reason or "missing_tags", "the repair turn was not a final turn")
            ep.done = True
            return
        ep.last_issue = turn.reason if turn.kind in ("empty", "invalid") else None
        if turn.kind == "explore":
            if ep.sandbox is None:
                ep.sandbox = SandboxEpisode(
                    self.query_path, schema=self.schema, limits=self.limits, episode_id=f"{ep.cand.id}-explore"
                )
            t0 = time.perf_counter()
            cell = ep.sandbox.run(turn.code or "")
            ep.cand.latency_s += time.perf_counter() - t0
            obs = cell.observation(self.config.preview_rows, self.config.observation_chars)
            hints = self._direction_hints(t.query for t in cell.traced)
            if hints:
                obs = f"{obs}\n{hints}"
            if turn.code == ep.last_code and ep.last_failed:
                obs = f"{obs}\n{REPEATED_NOTE}"
            ep.last_code, ep.last_failed = turn.code, not cell.ok
            marked = any(t.id in cell.evidence for t in cell.traced)
            printed = self._answer(cell.stdout, ep.cand.answer_type) if cell.ok and marked else None
            if printed is not None:
                ep.program, ep.program_turn, ep.printed = turn.code, ep.turns, printed
                ep.closing_due = self.config.closing == "force"
                obs = f"{obs}\n{CLOSING_FORCED if ep.closing_due else CLOSING_HINT}"
            record["cell"] = cell.to_json()
        else:
            obs = (
                "Invalid turn: write exactly one ```python block, or the final turn (one ```python block "
                "then <question>...</question><answer>...</answer>)."
            )
        record["observation"] = obs
        ep.messages.append({"role": "user", "content": information_message(obs)})
        if repair and not ep.closing_due:
            ep.cand.fail("missing_tags", "the repair turn was a program that printed no answer with its evidence")
            ep.done = True
        elif ep.turns >= self.config.max_turns and not ep.closing_due:
            reason = ep.last_issue if ep.last_issue in ("empty_output", "no_code") else "loop_limit"
            ep.cand.fail(reason, f"no final turn in {self.config.max_turns} turns")
            ep.done = True

    @staticmethod
    def _answer(stdout: str, answer_type: str) -> str | None:
        """The answer of ``answer_type`` the last line of ``stdout`` prints, formatted (``None``
        for ``null``, an empty set or another type): what a program must print to be closed on."""
        lines = [line for line in stdout.splitlines() if line.strip()]
        try:
            value = parse_printed(lines[-1] if lines else None, answer_type)
        except AnswerParseError:
            return None
        return None if value == [] else format_answer(value)

    def _direction_hints(self, queries: Any) -> str:
        """A note per relationship pattern whose direction the schema does not have, with the
        direction it does have."""
        notes = []
        for query in queries:
            for bad in direction_errors(query, self.schema):
                notes.append(f"Note: {bad} is not in the schema (it returns nothing){self._reverse(bad)}.")
        return "\n".join(dict.fromkeys(notes))

    def _reverse(self, pattern: str) -> str:
        m = re.fullmatch(r"\(:(\w*)\)-\[:(\w+)\]->\(:(\w*)\)", pattern)
        if m and self.schema.has_triple(m.group(3), m.group(2), m.group(1)):
            return f"; the schema has (:{m.group(3)})-[:{m.group(2)}]->(:{m.group(1)})"
        return ""

    def _copies(self, cand: QACandidate) -> QACandidate | None:
        """The worked example this final turn repeats (same structure and same entities), if any."""
        from components.rubric.evidence import s_pair

        mine = [e.get("query", "") for e in cand.evidence]
        entities = _entities(cand.evidence)
        for ex in self.examples:
            theirs = [e.get("query", "") for e in ex.evidence]
            same_shape = len(mine) == len(theirs) and all(
                s_pair(t, m, self.schema) >= 0.999 for t, m in zip(theirs, mine, strict=True)
            )
            if same_shape and entities == _entities(ex.evidence):
                return ex
        return None

    def _question_problem(self, cand: QACandidate, answer: Any) -> tuple[str, str] | None:
        """What makes the question text unfit for its checked program, by three deterministic
        checks (the program checks never read the question; the semantic judge is the full check):

        * ``answer_in_question`` — every quoted name of the question is (a member of) its entity or
          set answer ("Which venue "X" has …?" → X), so nothing else anchors it (a choice between
          several named options is fine);
        * ``question_form`` — the question asks for another kind of answer: yes/no wording without
          a boolean answer or the reverse, "how many" without a number, a list without a set, a
          "which / who" question answered by a number;
        * ``ungrounded_question`` — a quoted name of the question is nowhere in the evidence: not a
          parameter, literal or returned value of its queries, nor the name of a node whose key is
          one of those.
        """
        from components.quizzer.answers import normalise_text
        from components.quizzer.paraphrase import question_scope

        question, kind = cand.question, cand.answer_type
        quoted = [normalise_text(m) for m in _QUOTED_NAME.findall(question) if m.strip()]
        members = {normalise_text(m) for m in (answer if isinstance(answer, list) else [answer])}
        if kind in ("entity", "set") and quoted and set(quoted) <= members:
            return "answer_in_question", "every name the question gives is its own answer"
        scope, bare = question_scope(question), question.strip().lower()
        wrong = (
            (scope == "yes_no") != (kind == "boolean")
            or (scope == "count" and kind != "number" and not re.search(r"\b(which|who)\b", bare))
            or (scope == "several" and kind != "set")
            or (kind == "number" and bare.startswith(("which", "who")))
            or (kind == "entity" and _NUMBER.fullmatch(str(answer).strip()) is not None)
        )
        if wrong:
            return "question_form", f"its wording ({scope}) does not ask for a {kind} answer like {cand.answer!r}"
        if not quoted:
            return None
        raw: list[Any] = []
        for e in cand.evidence:
            raw += [v for p in (e.get("params") or {}).values() for v in (p if isinstance(p, list) else [p])]
            raw += [a or b for a, b in _LITERAL.findall(str(e.get("query", "")))]
            raw += [cell for row in e.get("rows") or [] for cell in (row if isinstance(row, list) else [row])]
        raw = [v for v in raw if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
        known = {normalise_text(v) for v in raw}
        missing = [m for m in quoted if m not in known]
        for label, spec in self.schema.labels.items() if missing else ():
            numeric = spec.properties.get(spec.primary_key, "STRING").upper() != "STRING"
            keys = sorted({v for v in raw if isinstance(v, (int, float)) == numeric}, key=str)
            if not keys:
                continue
            try:
                res = self.query_path.run(
                    f"MATCH (n:{q(label)}) WHERE n.{q(spec.primary_key)} IN $keys "
                    f"RETURN n.{q(display_property(self.schema, label))} AS name",
                    {"keys": keys},
                )
            except GraphError:  # keys of another type than the label's key: no names from it
                continue
            known.update(normalise_text(r[0]) for r in res.rows if r[0] is not None)
        missing = [m for m in missing if m not in known]
        if missing:
            return "ungrounded_question", f'the question names "{missing[0]}", which its evidence does not reach'
        return None

    def _final(self, ep: _Episode, turn: ParsedTurn, record: dict[str, Any]) -> None:
        cand, answer_type = ep.cand, ep.cand.answer_type
        cand.question, cand.answer = turn.question or "", turn.answer or ""
        cand.final_program = turn.code or ""
        cand.failure_reason = cand.failure_detail = None
        cand.evidence, cand.answer_value = [], None
        if turn.reason is not None:
            cand.fail(turn.reason)
            return
        t0 = time.perf_counter()
        run = run_final_program(
            self.query_path,
            self.schema,
            cand.final_program,
            limits=self.limits,
            episode_id=f"{cand.id}-final{'-repair' if record['repair'] else ''}",
        )
        cand.latency_s += time.perf_counter() - t0
        record["final_run"] = run.to_dict()
        cand.evidence = [t.to_json() for t in run.evidence]
        if not run.ok:
            cand.fail(run.failure_reason or "code_error", run.failure_detail)
            return
        wrong = [w for t in run.evidence for w in direction_errors(t.query, self.schema)]
        if wrong:
            cand.fail("schema_error", "relationship direction not in the schema: " + ", ".join(wrong))
            return
        if not cand.answer.strip():
            cand.fail("empty_answer")
            return
        try:
            stated = parse_answer(cand.answer, answer_type)
        except AnswerParseError as exc:
            cand.fail("unparseable_answer", f"stated answer: {exc}")
            return
        try:
            printed = parse_printed(run.printed, answer_type)
        except AnswerParseError as exc:
            cand.fail("answer_mismatch", f"printed answer {run.printed!r} is not a {answer_type}: {exc}")
            return
        if not answers_agree(stated, printed, answer_type):
            cand.fail("answer_mismatch", f"printed {run.printed!r} but stated {cand.answer!r}")
            return
        problem = self._question_problem(cand, stated)
        if problem is not None:
            cand.fail(*problem)
            return
        copied = self._copies(cand)
        if copied is not None:
            cand.fail("copied_example", f"same query structure and entities as the worked example {copied.id}")
            return
        cand.answer_value, cand.answer = stated, format_answer(stated)
        cand.meta["answer_in_evidence"] = answer_in_rows(stated, answer_type, run.evidence)

    # -- public --------------------------------------------------------------------------
    def generate(
        self, n: int, progress: Callable[[int, int], None] | None = None, *, start_index: int = 0
    ) -> list[QACandidate]:
        """``n`` candidates (failed ones included, each with its reason), in index order."""
        eps = []
        for i in range(start_index, start_index + n):
            try:
                eps.append(self._episode(i))
            except Exception as exc:  # noqa: BLE001 - a failed setup is a failed candidate
                cand = QACandidate(id=candidate_id(self.seed, i, self.kind), quizzer=self.kind, seed=self.seed, index=i)
                eps.append(_Episode(i, cand.fail("no_start_node", f"{type(exc).__name__}: {exc}"), None, done=True))
        finished = 0
        try:
            for turn in range(self.config.max_turns + 1):  # + a closing turn owed after the last
                active = [ep for ep in eps if not ep.done]
                if not active:
                    break
                groups: dict[str, list[_Episode]] = {}
                for ep in active:  # a call per prefix (a backend continues every row of a call or none)
                    groups.setdefault(self._prefix(ep), []).append(ep)
                for prefix, group in groups.items():
                    for ep, gen in zip(group, self._call(group, turn, prefix=prefix)):
                        if not ep.done:
                            self._guarded(ep, gen)
                finished = self._report(eps, finished, progress, n, final=False)
            if self.config.repair:
                failed = [ep for ep in eps if ep.cand.failure_reason not in _NO_REPAIR and not ep.cand.ok]
                for ep in failed:
                    ep.messages.append(
                        {
                            "role": "user",
                            "content": repair_message(
                                ep.cand.failure_reason or "failed", ep.cand.failure_detail, ep.cand.answer_type
                            ),
                        }
                    )
                    ep.cand.trace.append(
                        {
                            "kind": "repair_request",
                            "failure_reason": ep.cand.failure_reason,
                            "failure_detail": ep.cand.failure_detail,
                        }
                    )
                    ep.cand.meta["first_failure"] = ep.cand.failure_reason
                for ep in failed:
                    ep.closing_due = False
                gens = self._call(failed, self.config.max_turns, prefix=CODE_PREFIX if self.config.code_first else "")
                for ep, gen in zip(failed, gens):
                    if ep.cand.failure_reason == "backend_error" and gen is None:
                        continue
                    self._guarded(ep, gen, repair=True)
                    ep.cand.repaired = ep.cand.ok
                # a repair turn that was a program to close on is owed its closing turn
                owed = [ep for ep in failed if ep.closing_due]
                for ep, gen in zip(owed, self._call(owed, self.config.max_turns + 1, prefix=CLOSING_PREFIX)):
                    self._guarded(ep, gen, repair=True)
                    ep.cand.repaired = ep.cand.ok
        finally:
            for ep in eps:
                ep.close()
        self._report(eps, 0, progress, n, final=True)
        return [ep.cand for ep in eps]

    def _guarded(self, ep: _Episode, gen: Generation | None, *, repair: bool = False) -> None:
        try:
            self._step(ep, gen, repair=repair)
        except Exception as exc:  # noqa: BLE001 - a bug in one episode must not end the batch
            ep.cand.fail("internal_error", f"{type(exc).__name__}: {exc}")
            ep.done = True

    @staticmethod
    def _report(
        eps: list[_Episode], before: int, progress: Callable[[int, int], None] | None, n: int, *, final: bool
    ) -> int:
        done = sum(ep.done for ep in eps) if not final else n
        if progress is not None and done != before:
            progress(done, n)
        return done
