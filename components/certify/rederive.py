"""The judge's first stage: **independent re-derivation** of a candidate's answer.

"Does this question mean what the program computes?" is hard for a small model to judge by
reading; writing a query for a question is what a code model does well. So the judge model is
given what a stranger to the candidate would have — the **question**, its **answer type**, the
graph's **schema** with what each relationship direction means in words (:func:`directions`), the
**nodes the question names** (found by the code, see below) and
**worked examples made on this graph** — and never the candidate's program, evidence or answer.
It writes its own read-only Cypher query ``k`` times (sampled), each query runs through the
read-only query path, each result is read as the answer type asks, and the typed answers are
compared with the candidate's (:func:`components.rubric.metrics.answers_equal`, the project's one
scoring function).

**Entity linking** (by code, not the model): every quoted name in the question (``"..."`` or
``“...”``) is looked up in each label's display property (:func:`display_property`) with a
parameterised query; the prompt lists the matching nodes with their primary keys, so the model
anchors its query on ``{id: $start}`` the way the worked examples do.

**Worked examples** are template-quizzer items of this graph made from a seed of their own (never
the items under review); for each question the ``examples`` most similar by word overlap (quoted
names ignored) are shown, each as the question, its answer type, its linked entities, and the
query with its parameters.

**Parameters** a reply leaves out (small models often stop after the query) are bound to the named
nodes' keys (:func:`bind_missing`): ``$ids`` to all of them, any other name to the next node not yet
bound, in the order the question names them.

**Reading a result** (:func:`read_result`), in the column named ``answer`` (else the first column
for an entity or a set — ``name, score`` ordered — and the last one for a number or a yes/no):
a *boolean* is one row whose cell is a boolean (a number: > 0); a *number* is one row whose cell
is a number; a *set* is one row holding a list, or the column's distinct values over the rows; an
*entity* is the one distinct value of the column (a yes/no value is never a member or an entity).
An empty result, ``NULL`` or a result that does
not read as the type gives no answer.

**A repair turn** (``repairs``, 1): a derivation whose query the graph refused or failed on, or
whose result does not read as the answer type (:data:`REPAIRABLE`), is shown the error and written
again, in one batched call per chunk of questions; the new attempt replaces it (the old one kept as
``first``).

**A reading the graph cannot hold**: a query with a relationship pattern no schema triple can
match (:func:`components.certify.checks.triple_fault`: a paper that "wrote" a venue, a direction
turned round) is not run; its status is ``impossible`` and its answer *nothing*
(:data:`NO_SUCH_RELATIONSHIP`; "no" for a yes/no question), and it votes like any other answer —
a question whose relation was swapped for one its labels do not have asks for nothing, so a
candidate claiming members or a value disagrees with it.

**Verdict** (:func:`decide`) over the ``k`` derivations: those with an answer (:data:`ANSWERED`) are *executable*;
none → ``uncertain``; a majority of them equal to the candidate's answer → ``accept``; the most
common answer differs from the candidate's, is backed by at least ``min_votes`` derivations (1) and
by more derivations than agree → ``reject`` (the judge's own answer is recorded); anything else →
``uncertain``. A reply without a query, unparseable parameters, a refused or failing query or a
timeout is a derivation with no answer — never an accept.

Re-derivation cannot see a fault that leaves the answer unchanged (a hard-coded value that
happens to be right, a yes/no question answered right by chance); the two-stage review
(:mod:`components.certify.judge`) and the certifier's data-flow check stay responsible for those.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from components.certify.checks import triple_fault
from components.cypher.safety import check_read_only
from components.graph.schema import GraphSchema
from components.llm.base import ChatMessage, GenerationBackend, SamplingParams
from components.quizzer.context import display_property
from components.rubric.metrics import answers_equal, canonical_text

__all__ = [
    "ANSWERED",
    "DERIVATION_STATUSES",
    "NO_SUCH_RELATIONSHIP",
    "REPAIRABLE",
    "Derivation",
    "Example",
    "Rederiver",
    "RederiveVerdict",
    "bind_missing",
    "decide",
    "directions",
    "examples_from",
    "judge_examples",
    "link_entities",
    "parse_derivation",
    "read_result",
]

#: what became of one derivation: ``answer`` (executable, typed), or why it has none
DERIVATION_STATUSES: Final = (
    "answer",
    "impossible",
    "no_query",
    "bad_params",
    "refused",
    "failed",
    "empty",
    "untyped",
)
#: the statuses whose derivation has an answer that takes part in the vote
ANSWERED: Final = ("answer", "impossible")
#: the statuses a repair turn is asked for: the query ran into an error the model can read
REPAIRABLE: Final = ("refused", "failed", "untyped")
#: the answer of a derivation whose pattern no schema triple can match (a yes/no question: "no")
NO_SUCH_RELATIONSHIP: Final = "(nothing: the schema has no such relationship)"

_QUOTED: Final = re.compile(r'"([^"\n]{1,200})"|“([^”\n]{1,200})”')
_FENCE: Final = re.compile(r"```[ \t]*(?:cypher|sql)?[ \t]*\n(.*?)(?:```|$)", re.DOTALL | re.IGNORECASE)
_BARE: Final = re.compile(r"^\s*((?:OPTIONAL\s+)?MATCH|WITH|UNWIND|RETURN|CALL)\b.*", re.DOTALL | re.IGNORECASE | re.M)
_PARAMS: Final = re.compile(r"^\s*PARAMS\s*:\s*(.*)$", re.IGNORECASE | re.M)
_WORD: Final = re.compile(r"[a-z]+")
_MAX_ROWS: Final = 500
_MAX_LINKS: Final = 3  # nodes listed per quoted name

_REPAIR: Final = (
    "Running that query gave: {detail}\n"
    "Write the corrected query for the same question, in the same form: a ```cypher block, then PARAMS."
)

_SYSTEM: Final = (
    "You write ONE read-only Cypher query that answers a question about this property graph.\n\n"
    "{schema}\n\n"
    "What each relationship direction means:\n{directions}\n\n"
    "Rules:\n"
    '- Anchor on the nodes listed under "Nodes named in the question" by their key, with parameters '
    "($start, $other, $ids).\n"
    "- Return the answer in a column named answer: a yes/no question returns one boolean, a number question "
    "one number, an entity question one row, a set question one row per member (or one list).\n"
    "- Follow the relationship directions of the schema.\n"
    "Reply with the query in a ```cypher block, then one line: PARAMS: {{json object}}"
)


@dataclass(frozen=True)
class Example:
    """One worked example: a question of this graph and the query that answers it."""

    question: str
    answer_type: str
    query: str
    params: Mapping[str, Any]

    def words(self) -> frozenset[str]:
        return _words(self.question)


@dataclass
class Derivation:
    """One sampled derivation: the model's reply, the query and parameters read from it, and what
    running it gave (``status`` one of :data:`DERIVATION_STATUSES`)."""

    text: str
    status: str
    query: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    answer: Any = None  # the typed result's canonical text when status is one of ANSWERED
    detail: str = ""
    first: Derivation | None = None  # the attempt a repair turn replaced

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "status": self.status,
            "query": self.query,
            "params": self.params,
            "answer": self.answer,
            "detail": self.detail,
            "first": None if self.first is None else self.first.to_json(),
        }


@dataclass
class RederiveVerdict:
    """The re-derivation stage's outcome for one candidate."""

    verdict: str  # accept | reject | uncertain
    derived: str | None  # the judge's own answer (the most common one), if any
    agree: int  # derivations whose answer equals the candidate's
    executable: int  # derivations with an answer (ANSWERED)
    derivations: list[Derivation]
    entities: list[dict[str, Any]] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)  # the worked examples' questions shown
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None

    @property
    def answers(self) -> list[Any]:
        """The answers that voted: those of the derivations with one (:data:`ANSWERED`)."""
        return _voting(self.derivations)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "derived": self.derived,
            "agree": self.agree,
            "executable": self.executable,
            "derivations": [d.to_json() for d in self.derivations],
            "entities": self.entities,
            "examples": self.examples,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "error": self.error,
        }


def _voting(derivations: Sequence[Derivation]) -> list[Any]:
    return [d.answer for d in derivations if d.status in ANSWERED]


def _verb(rel_type: str, *, plural: bool = False) -> str:
    """The type's name as a verb phrase; ``plural`` turns a third-person "cites" into "cite"."""
    words = rel_type.replace("_", " ").lower().split()
    if plural and words and words[0].endswith("s") and not words[0].endswith("ss"):
        words[0] = words[0][:-1]
    return " ".join(words)


def directions(schema: GraphSchema) -> str:
    """Each relationship triple of ``schema`` in words, with the pattern for each of its two
    readings from a named node ``x`` — "the Papers that X cites" against "the Papers that cite X"
    is where a small model's query most often turns round (docs/certification.md)::

        (a:Paper)-[:CITES]->(b:Paper) reads "a cites b":
          the Papers that X cites: (x:Paper {id: $start})-[:CITES]->(b:Paper)
          the Papers that cite X: (a:Paper)-[:CITES]->(x:Paper {id: $start})

    Made from the schema alone (the type's name as the verb), so it holds on any graph."""
    labels, lines = schema.labels, []
    for r in schema.rel_types:
        verb = _verb(r.type)
        for t in r.triples:
            src_key = labels[t.source].primary_key if t.source in labels else "id"
            dst_key = labels[t.target].primary_key if t.target in labels else "id"
            lines += [
                f'(a:{t.source})-[:{r.type}]->(b:{t.target}) reads "a {verb} b":',
                f"  the {t.target}s that X {verb}: (x:{t.source} {{{src_key}: $start}})-[:{r.type}]->(b:{t.target})",
                f"  the {t.source}s that {_verb(r.type, plural=True)} X: "
                f"(a:{t.source})-[:{r.type}]->(x:{t.target} {{{dst_key}: $start}})",
            ]
    return "\n".join(lines) if lines else "(no relationships)"


def _words(question: str) -> frozenset[str]:
    return frozenset(_WORD.findall(_QUOTED.sub(" ", question).lower()))


def quoted_names(question: str) -> list[str]:
    """The quoted names of ``question`` in order, each once."""
    out: list[str] = []
    for a, b in _QUOTED.findall(question or ""):
        name = (a or b).strip()
        if name and name not in out:
            out.append(name)
    return out


def link_entities(question: str, query_path: Any, schema: GraphSchema) -> list[dict[str, Any]]:
    """The nodes each quoted name of ``question`` names: ``{"name", "label", "key", "value"}``,
    at most :data:`_MAX_LINKS` per name, found by one parameterised query per label over its
    display property (labels and properties come from the schema, the names are parameters)."""
    names = quoted_names(question)
    if not names:
        return []
    found: list[dict[str, Any]] = []
    for label, node in schema.labels.items():
        prop = display_property(schema, label)
        if prop == node.primary_key or node.properties.get(prop) != "STRING":
            continue
        query = (
            f"MATCH (n:`{label}`) WHERE n.`{prop}` IN $names "
            f"RETURN n.`{prop}` AS name, n.`{node.primary_key}` AS key ORDER BY key LIMIT $limit"
        )
        try:
            res = query_path.run(query, {"names": names, "limit": _MAX_LINKS * len(names)})
        except Exception:  # noqa: BLE001 - a label that cannot be searched links nothing
            continue
        for name, key in res.rows:
            found.append({"name": name, "label": label, "key": node.primary_key, "value": key})
    order = {n: i for i, n in enumerate(names)}
    found.sort(key=lambda f: (order.get(f["name"], len(order)), f["label"], str(f["value"])))
    per: Counter[str] = Counter()
    out = []
    for f in found:
        per[f["name"]] += 1
        if per[f["name"]] <= _MAX_LINKS:
            out.append(f)
    return out


def _entity_lines(entities: Sequence[Mapping[str, Any]], names: Sequence[str]) -> str:
    lines = [
        f'"{e["name"]}" = (:{e["label"]} {{{e["key"]}: {json.dumps(e["value"], ensure_ascii=False)}}})'
        for e in entities
    ]
    linked = {e["name"] for e in entities}
    lines += [f'"{n}" = no node has this name' for n in names if n not in linked]
    return "\n".join(lines) if lines else "none"


def _task(question: str, answer_type: str, entities: Sequence[Mapping[str, Any]]) -> str:
    return (
        f"Question: {question}\nAnswer type: {answer_type}\n"
        f"Nodes named in the question:\n{_entity_lines(entities, quoted_names(question))}"
    )


def _reply(query: str, params: Mapping[str, Any]) -> str:
    return f"```cypher\n{query.strip()}\n```\nPARAMS: {json.dumps(dict(params), ensure_ascii=False, default=str)}"


def examples_from(candidates: Sequence[Any]) -> list[Example]:
    """Worked examples from certified single-query candidates (their one evidence query and
    parameters); candidates with another number of evidence queries are left out."""
    out = []
    for c in candidates:
        ev = [e for e in (getattr(c, "evidence", None) or []) if isinstance(e, dict) and e.get("query")]
        if len(ev) == 1 and c.question:
            out.append(Example(c.question, c.answer_type, ev[0]["query"], dict(ev[0].get("params") or {})))
    return out


def judge_examples(query_path: Any, schema: GraphSchema, *, seed: int = 0, n: int = 120) -> list[Example]:
    """The worked-example pool of a graph: template-quizzer items made from a seed of their own
    (``seed + 104_729``, as the LLM Quizzer's), never the candidates under review."""
    from components.quizzer.template import TemplateQuizzer

    return examples_from([c for c in TemplateQuizzer(query_path, schema, seed=seed + 104_729).generate(n) if c.ok])


def parse_derivation(text: str) -> tuple[str | None, dict[str, Any] | None, str]:
    """The query and parameters of a reply: the first fenced block (else the text from the first
    clause keyword), and the JSON object after ``PARAMS:`` (none: ``{}``). Returns ``(query,
    params, problem)``: ``query`` ``None`` when there is none, ``params`` ``None`` when the
    ``PARAMS`` line is not a JSON object."""
    text = text or ""
    m = _FENCE.search(text)
    query = m.group(1) if m else None
    if query is None:
        b = _BARE.search(text)
        query = b.group(0) if b else None
        if query is not None:
            query = _PARAMS.split(query)[0] if _PARAMS.search(query) else query
    if query is not None:
        query = _PARAMS.sub("", query).strip().rstrip(";").strip() or None
    if query is None:
        return None, {}, "no query in the reply"
    p = _PARAMS.search(text[m.end() :] if m else text)
    if p is None:
        return query, {}, ""
    try:
        params = json.loads(p.group(1).strip())
    except ValueError as exc:
        return query, None, f"PARAMS is not JSON: {exc}"
    if not isinstance(params, dict):
        return query, None, "PARAMS is not a JSON object"
    return query, params, ""


_PARAM_REF: Final = re.compile(r"\$`?([A-Za-z_]\w*)")


def bind_missing(query: str, params: Mapping[str, Any], entities: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``params`` with the parameters ``query`` uses but ``params`` lacks bound to the named nodes'
    keys (module docstring); the first node of each name only."""
    out = dict(params)
    keys, seen = [], set()
    for e in entities:
        if e["name"] not in seen:
            seen.add(e["name"])
            keys.append(e["value"])
    free = [k for k in keys if k not in out.values()]
    for name in dict.fromkeys(_PARAM_REF.findall(query)):
        if name in out:
            continue
        if name == "ids":
            out[name] = list(keys)
        elif free:
            out[name] = free.pop(0)
    return out


def _column(result: Any, answer_type: str) -> int:
    cols = [str(c).lower() for c in result.columns]
    if "answer" in cols:
        return cols.index("answer")
    return 0 if answer_type in ("entity", "set") else len(cols) - 1


def read_result(result: Any, answer_type: str) -> tuple[Any, str]:
    """``result`` read as ``answer_type`` (module docstring): ``(value, "")`` or ``(None, why)``."""
    if not result.columns:
        return None, "no columns"
    if not result.rows:
        return None, "no rows"
    j = _column(result, answer_type)
    values = [row[j] for row in result.rows]
    if answer_type == "set":
        if len(values) == 1 and isinstance(values[0], (list, tuple)):
            values = list(values[0])
        if any(isinstance(v, bool) for v in values):
            return None, "a yes/no value for a set question"
        members = sorted({str(v) for v in values if v is not None})
        return (members, "") if members or values == [] else (None, "only NULL members")
    distinct = {json.dumps(v, sort_keys=True, default=str) for v in values}
    if len(distinct) != 1:
        return None, f"{len(values)} rows with different values for one {answer_type}"
    v = values[0]
    if v is None:
        return None, "NULL"
    if answer_type == "boolean":
        if isinstance(v, bool):
            return v, ""
        if isinstance(v, (int, float)):
            return v > 0, ""
        return None, f"{type(v).__name__} for a yes/no question"
    if answer_type == "number":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None, f"{type(v).__name__} for a number question"
        return v, ""
    if isinstance(v, (list, tuple, dict, bool)):
        return None, f"{type(v).__name__} for an entity question"
    return v, ""


def decide(
    answers: Sequence[Any], candidate_answer: Any, answer_type: str, *, min_votes: int = 1
) -> tuple[str, str | None, int]:
    """The verdict over the executable derivations' ``answers`` (module docstring): ``(verdict,
    the judge's own answer or None, how many agree with the candidate)``."""
    if not answers:
        return "uncertain", None, 0
    agree = sum(answers_equal(a, candidate_answer, answer_type) for a in answers)
    votes = Counter(canonical_text(a, answer_type) for a in answers)
    top, top_n = votes.most_common(1)[0]
    if agree * 2 > len(answers):
        return "accept", canonical_text(candidate_answer, answer_type), agree
    if not answers_equal(top, candidate_answer, answer_type) and top_n >= min_votes and top_n > agree:
        return "reject", top, agree
    return "uncertain", top, agree


@dataclass
class _Run:
    """What :meth:`Rederiver.rederive` gathers per question (text, answer type) over its chunks."""

    derived: dict[tuple[str, str], list[Derivation]] = field(default_factory=dict)
    tokens: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    entities: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    shown: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    chats: dict[tuple[str, str], list[ChatMessage]] = field(default_factory=dict)
    errors: dict[tuple[str, str], str] = field(default_factory=dict)  # a chunk the backend failed on


@dataclass
class Rederiver:
    """Re-derives candidates' answers: ``rederive(candidates) -> list[RederiveVerdict]`` (input
    order), ``k`` samples per question, ``chunk`` questions per batched ``generate`` call."""

    backend: GenerationBackend
    query_path: Any
    schema: GraphSchema
    examples: Sequence[Example] = ()
    k: int = 3
    shown: int = 3  # worked examples per prompt
    min_votes: int = 1  # chosen on the judge set's development part (docs/certification.md)
    temperature: float = 0.7
    max_new_tokens: int = 200
    seed: int | None = 0
    timeout_ms: int = 5000
    repairs: int = 1  # turns a derivation whose query failed gets, shown the error (0: none)
    chunk: int = 16  # questions per generate call (progress is reported after each; seeds do not change)

    def _pick(self, question: str) -> list[Example]:
        words = _words(question)
        pool = [e for e in self.examples if e.question != question]
        ranked = sorted(
            enumerate(pool),
            key=lambda ie: (-len(words & ie[1].words()) / max(1, len(words | ie[1].words())), ie[0]),
        )
        return [e for _, e in ranked[: self.shown]]

    def messages(
        self, question: str, answer_type: str, entities: Sequence[Mapping[str, Any]]
    ) -> tuple[list[ChatMessage], list[str]]:
        """The chat of one derivation (system, worked examples as turns, the task) and the
        examples' questions."""
        msgs: list[ChatMessage] = [
            {
                "role": "system",
                "content": _SYSTEM.format(schema=self.schema.to_text(counts=False), directions=directions(self.schema)),
            }
        ]
        picked = self._pick(question)
        for ex in picked:
            ex_entities = link_entities(ex.question, self.query_path, self.schema)
            msgs.append({"role": "user", "content": _task(ex.question, ex.answer_type, ex_entities)})
            msgs.append({"role": "assistant", "content": _reply(ex.query, ex.params)})
        msgs.append({"role": "user", "content": _task(question, answer_type, entities)})
        return msgs, [e.question for e in picked]

    def _run(self, text: str, answer_type: str, entities: Sequence[Mapping[str, Any]]) -> Derivation:
        query, params, problem = parse_derivation(text)
        if query is None:
            return Derivation(text, "no_query", detail=problem)
        if params is None:
            return Derivation(text, "bad_params", query, detail=problem)
        params = bind_missing(query, params, entities)
        try:
            fault = triple_fault(check_read_only(query), self.schema)
        except Exception:  # noqa: BLE001 - a query that does not parse is refused by the query path below
            fault = None
        if fault is not None:  # the reading needs a relationship this graph cannot hold: it answers "nothing"
            none = canonical_text(False, "boolean") if answer_type == "boolean" else NO_SUCH_RELATIONSHIP
            return Derivation(text, "impossible", query, params, answer=none, detail=f"{fault[0]}: {fault[1]}")
        try:
            result = self.query_path.run(query, params, limit=_MAX_ROWS, timeout_ms=self.timeout_ms)
        except Exception as exc:  # noqa: BLE001 - any failure is a derivation without an answer
            code = getattr(exc, "code", "")
            status = (
                "refused" if code in ("unsafe_query", "syntax_error", "schema_error", "dialect_error") else "failed"
            )
            return Derivation(text, status, query, params, detail=f"{code or type(exc).__name__}: {exc}"[:500])
        value, why = read_result(result, answer_type)
        if value is None:
            return Derivation(text, "empty" if why == "no rows" else "untyped", query, params, detail=why)
        return Derivation(text, "answer", query, params, answer=canonical_text(value, answer_type))

    def rederive(
        self, candidates: Sequence[Any], progress: Callable[[int], None] | None = None
    ) -> list[RederiveVerdict]:
        """One verdict per candidate; candidates asking the same question (same text and answer
        type) share one set of derivations. The questions go to the model ``chunk`` at a time,
        each request with the seed it would have in one batched call (``seed`` + its question's
        index; a repair: ``seed`` + its place among that turn's repairs) — the chunk size changes
        only which requests share a batch; after each chunk ``progress(n)`` is told how many more candidates
        are decided. A backend failure leaves its chunk's candidates ``uncertain``, saying why."""
        if not candidates:
            return []
        keys = [(str(c.question or ""), str(c.answer_type or "")) for c in candidates]
        unique = list(dict.fromkeys(keys))
        asked = Counter(keys)
        run = _Run()
        offsets = [0] * self.repairs  # each repair turn's requests so far, over the chunks
        size = max(1, self.chunk)
        for start in range(0, len(unique), size):
            part = unique[start : start + size]
            self._derive(part, start, run)
            for turn in range(self.repairs):
                offsets[turn] += self._repair(part, run, offsets[turn])
            if progress is not None:
                progress(sum(asked[key] for key in part))
        verdicts = []
        for c, key in zip(candidates, keys, strict=True):
            if key in run.errors:
                err = run.errors[key]
                verdicts.append(
                    RederiveVerdict("uncertain", None, 0, 0, [], run.entities[key], run.shown[key], error=err)
                )
                continue
            derivs, (p, t) = run.derived[key], run.tokens[key]
            answers = _voting(derivs)
            verdict, own, agree = decide(answers, c.answer, key[1], min_votes=self.min_votes)
            verdicts.append(
                RederiveVerdict(verdict, own, agree, len(answers), derivs, run.entities[key], run.shown[key], p, t)
            )
        return verdicts

    def _seeds(self, first: int, n: int) -> tuple[int, ...] | None:
        return None if self.seed is None else tuple(self.seed + first + i for i in range(n))

    def _derive(self, part: Sequence[tuple[str, str]], first: int, run: _Run) -> None:
        """``k`` derivations of each question in ``part`` (``first``: the index of its first
        question among all of them), in one batched call."""
        convs = []
        for key in part:
            run.entities[key] = link_entities(key[0], self.query_path, self.schema)
            msgs, run.shown[key] = self.messages(key[0], key[1], run.entities[key])
            run.chats[key] = msgs
            convs.append(msgs)
        params = SamplingParams(
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            seed=self.seed,
            n=self.k,
            seeds=self._seeds(first, len(part)),
        )
        try:
            out = self.backend.generate(convs, params)
            if len(out) != len(convs):
                raise ValueError(f"backend returned {len(out)} results for {len(convs)} prompts")
        except Exception as exc:  # noqa: BLE001 - a backend failure is an uncertain verdict
            err = f"rederive: {type(exc).__name__}: {exc}"[:2000]
            run.errors.update(dict.fromkeys(part, err))
            return
        for key, gens in zip(part, out, strict=True):
            gens = [g for g in gens or [] if g]
            run.derived[key] = [self._run(g.text, key[1], run.entities[key]) for g in gens]
            run.tokens[key] = [sum(g.prompt_tokens for g in gens), sum(g.completion_tokens for g in gens)]

    def _repair(self, part: Sequence[tuple[str, str]], run: _Run, first: int) -> int:
        """One repair turn over ``part``'s derivations, batched: every derivation whose query ran
        into an error (:data:`REPAIRABLE`) is shown the error and written again; the new attempt
        replaces it (keeping the old one as ``first``). ``first``: how many requests this turn
        made for earlier chunks (their seeds come first). Returns how many it made. A backend
        failure leaves the derivations as they were."""
        todo = [(key, i) for key in part if key in run.derived for i, d in enumerate(run.derived[key])]
        todo = [(key, i) for key, i in todo if run.derived[key][i].status in REPAIRABLE]
        if not todo:
            return 0
        chats = []
        for key, i in todo:
            d = run.derived[key][i]
            chats.append(
                [
                    *run.chats[key],
                    {"role": "assistant", "content": d.text},
                    {"role": "user", "content": _REPAIR.format(detail=d.detail or d.status)},
                ]
            )
        params = SamplingParams(
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            seed=self.seed,
            n=1,
            seeds=self._seeds(first, len(chats)),
        )
        try:
            out = self.backend.generate(chats, params)
            if len(out) != len(chats):
                raise ValueError(f"backend returned {len(out)} results for {len(chats)} prompts")
        except Exception as exc:  # noqa: BLE001 - no repair: the first attempts stand, saying why
            for key, i in todo:
                run.derived[key][i].detail += f" (repair turn failed: {type(exc).__name__}: {exc})"[:300]
            return len(todo)
        for (key, i), gens in zip(todo, out, strict=True):
            gens = [g for g in gens or [] if g]
            if not gens:
                continue
            first_try = run.derived[key][i]
            again = self._run(gens[0].text, key[1], run.entities[key])
            again.first = first_try if first_try.first is None else first_try.first
            run.derived[key][i] = again
            run.tokens[key][0] += gens[0].prompt_tokens
            run.tokens[key][1] += gens[0].completion_tokens
        return len(todo)
