"""The Template Quizzer: programmatic question/answer/evidence generation over the five axes.

For a draw of the axes (:func:`~components.quizzer.axes.sample_axes`) and a sampled start node,
a template for the requested ``(match family, return family, answer type)`` is instantiated from
the **schema** (its directed triples, labels and typed properties — any graph, no hard-coded
labels) and **real nodes** near the start node. The template yields Cypher (values only as
parameters; identifiers from the schema, quoted), an English question, and Python that computes
the answer from the query results. That becomes the candidate's *final program*::

    import json
    r1 = cypher('MATCH (s:`Author` {`id`: $start})-[:`WROTE`]->(x:`Paper`) RETURN DISTINCT x.`title` AS answer',
                **{'start': 'author_3'})
    answer = sorted({str(row[0]) for row in r1.rows if row[0] is not None})
    mark_evidence(r1)
    print(json.dumps(answer))

which is executed **through the sandbox** (a fresh :class:`~components.tools.sandbox.SandboxEpisode`),
so the evidence is real and registered. The printed answer is the candidate's answer.

Templates (``TEMPLATES``, registered by ``(match family, return family)``; see
:func:`template_table`):

================  =============================================================================
match family      return families (answer types)
================  =============================================================================
one_hop           distinct_set (set), aggregation (number), property (entity: the single
                  neighbour's name, or the relationship type between two given nodes; number:
                  the single neighbour's numeric property), ranking (entity, number, set: top-3
                  by a numeric property), boolean (does a given relationship exist)
multi_hop         distinct_set, aggregation (count), ranking (entity, number: the intermediate
                  node with the most second-hop neighbours), boolean (is a node reachable)
intersection      distinct_set, aggregation, boolean, ranking (entity) over the nodes linked
                  to the start node and to a second anchor
comparison        boolean (greater property or degree), property (entity: which of two is
                  greater), aggregation (difference), ranking (entity, number: the top of three),
                  distinct_set (neighbours of A that B lacks)
optional_match    aggregation (count, zero allowed), boolean (any neighbour), property (entity,
                  number of the single neighbour), distinct_set (collect)
shortest_path     aggregation (path length), boolean (within 3 hops)
================  =============================================================================

Degenerate instances are skipped, never emitted: an empty answer, a set larger than
``max_set_size``, a tie under ranking, equal values under comparison, a truncated evidence
result. Axes that no template (or no template on the sampled node) can honour are relaxed —
first the match family within the difficulty, then any match family; the requested axes are
recorded as drawn and the realised ones in ``meta["realized_axes"]``.

Determinism: attempt ``k`` draws everything from ``numpy.random.default_rng([seed, k])``; node
sampling orders by primary key; so a seed gives the same candidates on the same graph.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from components.graph.errors import GraphError
from components.graph.schema import GraphSchema
from components.graph.schema import quote_identifier as q
from components.quizzer.axes import DIFFICULTY_MATCHES, Axes, sample_axes
from components.quizzer.candidate import QACandidate, candidate_id, format_answer
from components.quizzer.context import (
    Hop,
    StartNode,
    display_property,
    hops_from,
    label_noun,
    neighbourhood,
    numeric_properties,
    plural,
    rel_phrase,
    sample_node,
)
from components.quizzer.final import (
    AnswerParseError,
    answer_in_rows,
    parse_answer,
    run_final_program,
)
from components.tools.sandbox import SandboxLimits

__all__ = [
    "TEMPLATES",
    "Instance",
    "Template",
    "TemplateContext",
    "TemplateQuizzer",
    "build_program",
    "template_table",
]

MAX_SET_SIZE: Final = 10
TOP_K: Final = 3
SHORTEST_MAX_HOPS: Final = 4
WITHIN_HOPS: Final = 3

# -- answer computations (Python run inside the sandbox; `answer = None` means degenerate) -------
# Every template's query computes its answer, so the program only reads it off the rows: a cell
# of a single-row result, a complete column, or a collect() cell — *directly grounded* evidence
# (components.certify.grounding). Ties and equal values are rejected before the program runs
# (TemplateContext.probe), never decided by Python.
COMPUTE: Final[dict[str, str]] = {
    "set": "answer = sorted({str(row[0]) for row in r1.rows if row[0] is not None})",
    "collect": "answer = sorted({str(v) for v in (r1.rows[0][0] or []) if v is not None}) if r1.rows else []",
    "single": "answer = r1.rows[0][0] if len(r1.rows) == 1 else None",
    "scalar": "answer = r1.rows[0][0] if r1.rows else None",
    "second": "answer = r1.rows[0][1] if r1.rows else None",
}


@dataclass
class Instance:
    """One instantiated template: question, queries, answer computation, realised axes."""

    question: str
    queries: list[tuple[str, dict[str, Any]]]
    compute: str  # a key of COMPUTE
    answer_type: str
    pattern: str
    anchors: list[dict[str, Any]] = field(default_factory=list)  # other nodes the question names


def build_program(queries: list[tuple[str, dict[str, Any]]], compute: str) -> str:
    """The final program: run the queries, compute ``answer``, mark evidence, print JSON."""
    lines = ["import json"]
    for i, (text, params) in enumerate(queries, 1):
        lines.append(f"r{i} = cypher({text!r}, **{params!r})")
    lines.append(COMPUTE[compute])
    lines.append("mark_evidence(" + ", ".join(f"r{i}" for i in range(1, len(queries) + 1)) + ")")
    lines.append("print(json.dumps(answer))")
    return "\n".join(lines) + "\n"


class TemplateContext:
    """What a template sees: the graph, the start node and its neighbourhood, an rng."""

    def __init__(
        self,
        query_path: Any,
        schema: GraphSchema,
        rng: np.random.Generator,
        start: StartNode,
        nb: dict[str, Any],
        pattern: str,
    ) -> None:
        self.query_path, self.schema, self.rng = query_path, schema, rng
        self.start, self.nb, self.pattern = start, nb, pattern
        self.counts = {(h["type"], h["direction"], h["label"]): h["count"] for h in nb.get("hops", [])}

    # -- helpers ------------------------------------------------------------------------
    def pk(self, label: str) -> str:
        return self.schema.labels[label].primary_key

    def name(self, label: str) -> str:
        return display_property(self.schema, label)

    def anchor(self, var: str, label: str, param: str = "start") -> str:
        return f"({var}:{q(label)} {{{q(self.pk(label))}: ${param}}})"

    def props(self, label: str, param: str = "start") -> str:
        return f" {{{q(self.pk(label))}: ${param}}}"

    def count(self, hop: Hop) -> int:
        return int(self.counts.get((hop.type, "out" if hop.forward else "in", hop.there), 0))

    def hops(self, *, lo: int = 1, hi: int | None = None) -> list[Hop]:
        """Hops from the start node with a neighbour count in ``[lo, hi]``, the ones matching
        the requested question pattern first (head_known: forward; tail_known: backward)."""
        hops = [
            h
            for h in hops_from(self.schema, self.start.label)
            if self.count(h) >= lo and (hi is None or self.count(h) <= hi)
        ]
        self.rng.shuffle(hops)
        want = {"head_known": True, "tail_known": False}.get(self.pattern)
        if want is not None:
            hops.sort(key=lambda h: h.forward != want)
        return hops

    def pick(self, items: list[Any]) -> Any:
        return items[int(self.rng.integers(len(items)))] if items else None

    def probe(self, text: str, params: dict[str, Any], limit: int = 10) -> list[tuple[Any, ...]] | None:
        """Rows of a query the template runs *before* emitting a candidate (to refuse ties and
        equal values); ``None`` when it fails."""
        try:
            return [tuple(r) for r in self.query_path.run(text, params, limit=limit).rows]
        except GraphError:
            return None

    def mention(self, label: str, name: Any) -> str:
        return f'the {label_noun(label)} "{name}"'

    def node_name(self, label: str, node_id: Any) -> str | None:
        try:
            res = self.query_path.run(
                f"MATCH (n:{q(label)} {{{q(self.pk(label))}: $id}}) RETURN n.{q(self.name(label))} AS name",
                {"id": node_id},
                limit=1,
            )
        except GraphError:
            return None
        return None if not res.rows or res.rows[0][0] is None else str(res.rows[0][0])

    def reachable(self, h1: Hop, h2: Hop, *, exclude_start: bool = True, limit: int = 50) -> list[tuple[Any, str]]:
        """Distinct ``(id, name)`` of nodes two hops away (``h1`` then ``h2``), in id order."""
        o = h2.there
        where = f" WHERE o.{q(self.pk(o))} <> $start" if exclude_start and o == self.start.label else ""
        text = (
            f"MATCH {h1.pattern('s', 'x', here_label=True, here_props=self.props(self.start.label))}, "
            f"{h2.pattern('x', 'o')}{where} RETURN DISTINCT o.{q(self.pk(o))} AS id, "
            f"o.{q(self.name(o))} AS name ORDER BY id"
        )
        try:
            rows = self.query_path.run(text, {"start": self.start.id}, limit=limit).rows
        except GraphError:
            return []
        return [(i, str(n if n is not None else i)) for i, n in rows]

    def reachable_one(self, hop: Hop, limit: int = 50) -> list[tuple[Any, str]]:
        """Distinct ``(id, name)`` of the start node's neighbours along ``hop``, in id order."""
        o = hop.there
        text = (
            f"MATCH {self.one_hop_pattern(hop)} RETURN DISTINCT x.{q(self.pk(o))} AS id, "
            f"x.{q(self.name(o))} AS name ORDER BY id"
        )
        try:
            rows = self.query_path.run(text, {"start": self.start.id}, limit=limit).rows
        except GraphError:
            return []
        return [(i, str(n if n is not None else i)) for i, n in rows if i != self.start.id]

    def random_node(self, label: str, *, exclude: Any = None) -> tuple[Any, str] | None:
        node = sample_node(self.query_path, self.schema, self.rng, labels=[label])
        if node is None or node.id == exclude:
            return None
        return node.id, node.name

    def one_hop_pattern(self, hop: Hop, there_props: str = "") -> str:
        return hop.pattern("s", "x", here_label=True, here_props=self.props(self.start.label), there_props=there_props)

    def pattern_of(self, hop: Hop) -> str:
        return "head_known" if hop.forward else "tail_known"


Builder = Callable[[TemplateContext, str], Instance | None]


@dataclass(frozen=True)
class Template:
    name: str
    match_family: str
    return_family: str
    answer_types: tuple[str, ...]
    build: Builder


TEMPLATES: list[Template] = []


def template(match: str, ret: str, answer_types: Iterable[str]) -> Callable[[Builder], Builder]:
    """Register a builder for ``(match family, return family)`` and the answer types it makes."""

    def deco(fn: Builder) -> Builder:
        TEMPLATES.append(Template(fn.__name__, match, ret, tuple(answer_types), fn))
        return fn

    return deco


def template_table() -> dict[tuple[str, str], list[str]]:
    """``(match family, return family) -> answer types`` covered by templates."""
    out: dict[tuple[str, str], list[str]] = {}
    for t in TEMPLATES:
        out.setdefault((t.match_family, t.return_family), []).extend(t.answer_types)
    return out


def _start_mention(ctx: TemplateContext) -> str:
    return ctx.start.mention()


def _yes_no_target(ctx: TemplateContext, true_pool: list[tuple[Any, str]], label: str) -> tuple[Any, str] | None:
    """Half the time a node for which the answer is yes, else a random node of ``label``."""
    if true_pool and ctx.rng.random() < 0.5:
        return ctx.pick(true_pool)
    return ctx.random_node(label, exclude=ctx.start.id)


# ---------------------------------------------------------------------------------------------
# one_hop
# ---------------------------------------------------------------------------------------------


@template("one_hop", "distinct_set", ["set"])
def one_hop_set(ctx: TemplateContext, answer_type: str) -> Instance | None:
    for hop in ctx.hops(lo=2, hi=MAX_SET_SIZE):
        text = f"MATCH {ctx.one_hop_pattern(hop)} RETURN DISTINCT x.{q(ctx.name(hop.there))} AS answer"
        return Instance(
            f"Which are the {hop.describe(_start_mention(ctx))}?",
            [(text, {"start": ctx.start.id})],
            "set",
            "set",
            ctx.pattern_of(hop),
        )
    return None


_AGGREGATES: Final = {"max": "the highest", "min": "the lowest", "avg": "the average"}


@template("one_hop", "aggregation", ["number"])
def one_hop_aggregate(ctx: TemplateContext, answer_type: str) -> Instance | None:
    for hop in ctx.hops(lo=2):
        desc = hop.describe(_start_mention(ctx))
        nums = numeric_properties(ctx.schema, hop.there)
        if nums and ctx.rng.random() < 0.5:
            prop, fn = ctx.pick(nums), ctx.pick(sorted(_AGGREGATES))
            value = f"round(avg(x.{q(prop)}), 2)" if fn == "avg" else f"{fn}(x.{q(prop)})"
            text = f"MATCH {ctx.one_hop_pattern(hop)} RETURN {value} AS answer"
            return Instance(
                f"What is {_AGGREGATES[fn]} {prop.replace('_', ' ')} of the {desc}"
                f"{' (to two decimals)' if fn == 'avg' else ''}?",
                [(text, {"start": ctx.start.id})],
                "scalar",
                "number",
                ctx.pattern_of(hop),
            )
        text = f"MATCH {ctx.one_hop_pattern(hop)} RETURN count(DISTINCT x) AS answer"
        return Instance(
            f"How many {desc} are there?", [(text, {"start": ctx.start.id})], "scalar", "number", ctx.pattern_of(hop)
        )
    return None


@template("one_hop", "property", ["entity", "number"])
def one_hop_property(ctx: TemplateContext, answer_type: str) -> Instance | None:
    if answer_type == "entity" and ctx.pattern == "relation_to_find":
        inst = one_hop_relation(ctx)
        if inst is not None:
            return inst
    for hop in ctx.hops(lo=1, hi=1):
        target = hop.describe_single(_start_mention(ctx))
        if answer_type == "number":
            nums = numeric_properties(ctx.schema, hop.there)
            if not nums:
                continue
            prop = ctx.pick(nums)
            text = f"MATCH {ctx.one_hop_pattern(hop)} RETURN DISTINCT x.{q(prop)} AS answer"
            return Instance(
                f"What is the {prop.replace('_', ' ')} of {target}?",
                [(text, {"start": ctx.start.id})],
                "single",
                "number",
                ctx.pattern_of(hop),
            )
        prop = ctx.name(hop.there)
        text = f"MATCH {ctx.one_hop_pattern(hop)} RETURN DISTINCT x.{q(prop)} AS answer"
        return Instance(
            f"What is the {prop.replace('_', ' ')} of {target}?",
            [(text, {"start": ctx.start.id})],
            "single",
            "entity",
            ctx.pattern_of(hop),
        )
    return one_hop_relation(ctx) if answer_type == "entity" else None


def one_hop_relation(ctx: TemplateContext) -> Instance | None:
    """Entity answer = the relationship type from one given node to another (relation to find)."""
    for hop in ctx.hops(lo=1):
        pool = ctx.reachable_one(hop)
        if not pool:
            continue
        other_id, other_name = ctx.pick(pool)
        s, o = _start_mention(ctx), ctx.mention(hop.there, other_name)
        src, dst = (s, o) if hop.forward else (o, s)
        start = f"(s:{q(ctx.start.label)}{ctx.props(ctx.start.label)})"
        there = f"(x:{q(hop.there)}{ctx.props(hop.there, 'other')})"
        arrow = f"{start}-[r]->{there}" if hop.forward else f"{start}<-[r]-{there}"
        text = f"MATCH {arrow} RETURN DISTINCT type(r) AS answer"
        return Instance(
            f"Which relationship type goes from {src} to {dst}?",
            [(text, {"start": ctx.start.id, "other": other_id})],
            "single",
            "entity",
            "relation_to_find",
            anchors=[{"label": hop.there, "id": other_id, "name": other_name}],
        )
    return None


def _rank_instance(
    ctx: TemplateContext,
    answer_type: str,
    match_text: str,
    params: dict[str, Any],
    name_expr: str,
    score_expr: str,
    group_desc: str,
    score_desc: str,
    pattern: str,
) -> Instance | None:
    """``ORDER BY score DESC, name LIMIT k`` (k = 1, or TOP_K for a set): the query ranks, the
    program reads the top row (or the column). A tie in the score at the cut makes the question
    ambiguous: refused by a probe with ``LIMIT k + 1``."""
    k = TOP_K if answer_type == "set" else 1
    head = f"{match_text} RETURN {name_expr} AS name, {score_expr} AS score ORDER BY score DESC, name"
    rows = ctx.probe(f"{head} LIMIT {k + 1}", params)
    if rows is None or len(rows) <= k or rows[k - 1][1] == rows[k][1]:
        return None
    text = f"{head} LIMIT {k}"
    if answer_type == "entity":
        question, compute = f"Among the {group_desc}, which one has {score_desc}?", "scalar"
    elif answer_type == "number":
        question, compute = (
            f"Among the {group_desc}, what is {score_desc.replace('the most', 'the largest number of')}?",
            "second",
        )
    else:
        question, compute = f"Which {TOP_K} of the {group_desc} have {score_desc}?", "set"
    return Instance(question, [(text, params)], compute, answer_type, pattern)


@template("one_hop", "ranking", ["entity", "number", "set"])
def one_hop_rank(ctx: TemplateContext, answer_type: str) -> Instance | None:
    for hop in ctx.hops(lo=TOP_K + 1 if answer_type == "set" else 2):
        nums = numeric_properties(ctx.schema, hop.there)
        if not nums:
            continue
        prop = ctx.pick(nums)
        match = f"MATCH {ctx.one_hop_pattern(hop)} WHERE x.{q(prop)} IS NOT NULL"
        desc = hop.describe(_start_mention(ctx))
        score = f"the highest {prop.replace('_', ' ')}"
        if answer_type == "number":
            score = f"the highest {prop.replace('_', ' ')} value"
        return _rank_instance(
            ctx,
            answer_type,
            match,
            {"start": ctx.start.id},
            f"x.{q(ctx.name(hop.there))}",
            f"x.{q(prop)}",
            desc,
            score,
            ctx.pattern_of(hop),
        )
    return None


def _claim(hop: Hop, here: str, there: str) -> str:
    """``the author "A" wrote the paper "P"`` with ``here`` the hop's near end."""
    phrase, participle = rel_phrase(hop.type)
    src, dst = (here, there) if hop.forward else (there, here)
    return f"{src} is {phrase} {dst}" if participle else f"{src} {phrase} {dst}"


@template("one_hop", "boolean", ["boolean"])
def one_hop_boolean(ctx: TemplateContext, answer_type: str) -> Instance | None:
    for hop in ctx.hops(lo=0):
        target = _yes_no_target(ctx, ctx.reachable_one(hop), hop.there)
        if target is None:
            continue
        other_id, other_name = target
        text = (
            f"MATCH {ctx.anchor('s', ctx.start.label)}, {ctx.anchor('y', hop.there, 'other')} "
            f"RETURN EXISTS {{ MATCH {hop.pattern('s', 'y', there_label=False)} }} AS answer"
        )
        claim = _claim(hop, _start_mention(ctx), ctx.mention(hop.there, other_name))
        return Instance(
            f"Is it true that {claim}?",
            [(text, {"start": ctx.start.id, "other": other_id})],
            "scalar",
            "boolean",
            "relation_to_find" if ctx.pattern == "relation_to_find" else ctx.pattern_of(hop),
            anchors=[{"label": hop.there, "id": other_id, "name": other_name}],
        )
    return None


# ---------------------------------------------------------------------------------------------
# multi_hop
# ---------------------------------------------------------------------------------------------


def _two_hops(ctx: TemplateContext) -> list[tuple[Hop, Hop]]:
    out = []
    for h1 in ctx.hops(lo=1):
        h2s = hops_from(ctx.schema, h1.there)
        ctx.rng.shuffle(h2s)
        out.extend((h1, h2) for h2 in h2s)
    return out


def _multi_match(ctx: TemplateContext, h1: Hop, h2: Hop) -> str:
    o = h2.there
    where = f" WHERE x.{q(ctx.pk(o))} <> $start" if o == ctx.start.label else ""
    return (
        f"MATCH {h1.pattern('s', 'm', here_label=True, here_props=ctx.props(ctx.start.label))}, "
        f"{h2.pattern('m', 'x')}{where}"
    )


def _multi_desc(ctx: TemplateContext, h1: Hop, h2: Hop) -> str:
    desc = h2.describe("the " + h1.describe(_start_mention(ctx)), anchor_plural=True)
    if h2.there == ctx.start.label:
        desc += f" (other than {_start_mention(ctx)} itself)"
    return desc


def _multi_pattern(h1: Hop, h2: Hop) -> str:
    return ("head_known" if h1.forward else "tail_known") if h1.forward == h2.forward else "hybrid"


@template("multi_hop", "distinct_set", ["set"])
def multi_hop_set(ctx: TemplateContext, answer_type: str) -> Instance | None:
    for h1, h2 in _two_hops(ctx)[:6]:
        n = len(ctx.reachable(h1, h2, limit=MAX_SET_SIZE + 1))
        if not 2 <= n <= MAX_SET_SIZE:
            continue
        text = f"{_multi_match(ctx, h1, h2)} RETURN DISTINCT x.{q(ctx.name(h2.there))} AS answer"
        return Instance(
            f"Which are the {_multi_desc(ctx, h1, h2)}?",
            [(text, {"start": ctx.start.id})],
            "set",
            "set",
            _multi_pattern(h1, h2),
        )
    return None


@template("multi_hop", "aggregation", ["number"])
def multi_hop_count(ctx: TemplateContext, answer_type: str) -> Instance | None:
    for h1, h2 in _two_hops(ctx)[:6]:
        if not ctx.reachable(h1, h2, limit=1):
            continue
        text = f"{_multi_match(ctx, h1, h2)} RETURN count(DISTINCT x) AS answer"
        return Instance(
            f"How many distinct {_multi_desc(ctx, h1, h2)} are there?",
            [(text, {"start": ctx.start.id})],
            "scalar",
            "number",
            _multi_pattern(h1, h2),
        )
    return None


@template("multi_hop", "ranking", ["entity", "number"])
def multi_hop_rank(ctx: TemplateContext, answer_type: str) -> Instance | None:
    for h1, h2 in _two_hops(ctx)[:6]:
        if ctx.count(h1) < 2 or not ctx.reachable(h1, h2, limit=1):
            continue
        group = h1.describe(_start_mention(ctx))
        per = h2.describe("it")
        score = f"the most {per}"
        return _rank_instance(
            ctx,
            answer_type,
            _multi_match(ctx, h1, h2),
            {"start": ctx.start.id},
            f"m.{q(ctx.name(h1.there))}",
            "count(DISTINCT x)",
            group,
            score,
            _multi_pattern(h1, h2),
        )
    return None


@template("multi_hop", "boolean", ["boolean"])
def multi_hop_boolean(ctx: TemplateContext, answer_type: str) -> Instance | None:
    for h1, h2 in _two_hops(ctx)[:6]:
        target = _yes_no_target(ctx, ctx.reachable(h1, h2), h2.there)
        if target is None:
            continue
        other_id, other_name = target
        inner = f"{h1.pattern('s', 'm')}, {h2.pattern('m', 'y', there_label=False)}"
        text = (
            f"MATCH {ctx.anchor('s', ctx.start.label)}, {ctx.anchor('y', h2.there, 'other')} "
            f"RETURN EXISTS {{ MATCH {inner} }} AS answer"
        )
        question = f"Is {ctx.mention(h2.there, other_name)} one of the {_multi_desc(ctx, h1, h2)}?"
        return Instance(
            question,
            [(text, {"start": ctx.start.id, "other": other_id})],
            "scalar",
            "boolean",
            _multi_pattern(h1, h2),
            anchors=[{"label": h2.there, "id": other_id, "name": other_name}],
        )
    return None


# ---------------------------------------------------------------------------------------------
# intersection
# ---------------------------------------------------------------------------------------------


def _intersection(ctx: TemplateContext, *, need_true: bool = True) -> tuple[Hop, Hop, Any, str] | None:
    """``(h1, h2, other id, other name)``: nodes x with ``start -h1- x -h2- other``."""
    for h1, h2 in _two_hops(ctx)[:8]:
        pool = ctx.reachable(h1, h2)
        if not pool and need_true:
            continue
        target = ctx.pick(pool) if need_true else _yes_no_target(ctx, pool, h2.there)
        if target is None:
            continue
        return h1, h2, target[0], target[1]
    return None


def _inter_match(ctx: TemplateContext, h1: Hop, h2: Hop) -> str:
    return (
        f"MATCH {h1.pattern('s', 'x', here_label=True, here_props=ctx.props(ctx.start.label))}, "
        f"{h2.pattern('x', 'o', there_props=ctx.props(h2.there, 'other'))}"
    )


def _inter_desc(ctx: TemplateContext, h1: Hop, h2: Hop, other_name: str) -> str:
    back = Hop(h2.source, h2.type, h2.target, not h2.forward)
    a = h1.describe(_start_mention(ctx))
    b = back.describe(ctx.mention(h2.there, other_name))
    return f"{plural(label_noun(h1.there))} that are both among the {a} and among the {b}"


@template("intersection", "distinct_set", ["set"])
def intersection_set(ctx: TemplateContext, answer_type: str) -> Instance | None:
    found = _intersection(ctx)
    if found is None:
        return None
    h1, h2, oid, oname = found
    text = f"{_inter_match(ctx, h1, h2)} RETURN DISTINCT x.{q(ctx.name(h1.there))} AS answer"
    return Instance(
        f"Which are the {_inter_desc(ctx, h1, h2, oname)}?",
        [(text, {"start": ctx.start.id, "other": oid})],
        "set",
        "set",
        "hybrid",
        anchors=[{"label": h2.there, "id": oid, "name": oname}],
    )


@template("intersection", "aggregation", ["number"])
def intersection_count(ctx: TemplateContext, answer_type: str) -> Instance | None:
    found = _intersection(ctx)
    if found is None:
        return None
    h1, h2, oid, oname = found
    text = f"{_inter_match(ctx, h1, h2)} RETURN count(DISTINCT x) AS answer"
    return Instance(
        f"How many {_inter_desc(ctx, h1, h2, oname)} are there?",
        [(text, {"start": ctx.start.id, "other": oid})],
        "scalar",
        "number",
        "hybrid",
        anchors=[{"label": h2.there, "id": oid, "name": oname}],
    )


@template("intersection", "boolean", ["boolean"])
def intersection_boolean(ctx: TemplateContext, answer_type: str) -> Instance | None:
    found = _intersection(ctx, need_true=False)
    if found is None:
        return None
    h1, h2, oid, oname = found
    inner = f"{h1.pattern('s', 'x')}, {h2.pattern('x', 'o', there_label=False)}"
    text = (
        f"MATCH {ctx.anchor('s', ctx.start.label)}, {ctx.anchor('o', h2.there, 'other')} "
        f"RETURN EXISTS {{ MATCH {inner} }} AS answer"
    )
    desc = _inter_desc(ctx, h1, h2, oname)
    return Instance(
        f"Is there at least one of the {desc}?",
        [(text, {"start": ctx.start.id, "other": oid})],
        "scalar",
        "boolean",
        "hybrid",
        anchors=[{"label": h2.there, "id": oid, "name": oname}],
    )


@template("intersection", "ranking", ["entity"])
def intersection_rank(ctx: TemplateContext, answer_type: str) -> Instance | None:
    found = _intersection(ctx)
    if found is None:
        return None
    h1, h2, oid, oname = found
    nums = numeric_properties(ctx.schema, h1.there)
    if not nums:
        return None
    prop = ctx.pick(nums)
    match = f"{_inter_match(ctx, h1, h2)} WHERE x.{q(prop)} IS NOT NULL"
    inst = _rank_instance(
        ctx,
        answer_type,
        match,
        {"start": ctx.start.id, "other": oid},
        f"x.{q(ctx.name(h1.there))}",
        f"x.{q(prop)}",
        _inter_desc(ctx, h1, h2, oname),
        f"the highest {prop.replace('_', ' ')}",
        "hybrid",
    )
    if inst is None:
        return None
    inst.anchors = [{"label": h2.there, "id": oid, "name": oname}]
    return inst


# ---------------------------------------------------------------------------------------------
# comparison (the start node against other nodes of its label)
# ---------------------------------------------------------------------------------------------


def _peers(ctx: TemplateContext, n: int) -> list[tuple[Any, str]]:
    """``n`` other nodes of the start label: two-hop peers when there are any, else random."""
    label = ctx.start.label
    pool: list[tuple[Any, str]] = []
    for h1, h2 in _two_hops(ctx)[:4]:
        if h2.there == label:
            pool = ctx.reachable(h1, h2)
            if len(pool) >= n:
                break
    chosen: list[tuple[Any, str]] = []
    seen = {ctx.start.id}
    order = [int(i) for i in ctx.rng.permutation(len(pool))] if pool else []
    for i in order:
        if pool[i][0] not in seen and len(chosen) < n:
            chosen.append(pool[i])
            seen.add(pool[i][0])
    for _ in range(4 * n):
        if len(chosen) >= n:
            break
        node = ctx.random_node(label)
        if node is not None and node[0] not in seen:
            chosen.append(node)
            seen.add(node[0])
    return chosen if len(chosen) == n else []


def _metric(ctx: TemplateContext) -> tuple[str, str, str] | None:
    """``(expression over var 'n', noun phrase 'the h index', per-node description)``: a numeric
    property of the start label or a degree along one of its hops."""
    label = ctx.start.label
    nums = numeric_properties(ctx.schema, label)
    hops = hops_from(ctx.schema, label)
    if nums and (not hops or ctx.rng.random() < 0.5):
        prop = ctx.pick(nums)
        words = prop.replace("_", " ")
        return f"n.{q(prop)}", f"a higher {words}", words
    if not hops:
        return None
    hop = ctx.pick(hops)
    expr = f"COUNT {{ {hop.pattern('n', '_x')} }}"
    return expr, f"more {hop.describe('it')}", f"number of {hop.describe('it')}"


def _compared(ctx: TemplateContext) -> tuple[Any, str, str, str, str, str, str] | None:
    """A peer and a metric with two distinct, non-null values: ``(other id, other name, metric of
    a, metric of b, 'a higher …' phrase, what, anchor pattern)``, or ``None`` (equal values make
    no question)."""
    peers, metric = _peers(ctx, 1), _metric(ctx)
    if not peers or metric is None:
        return None
    (oid, oname), (expr, more, what) = peers[0], metric
    label = ctx.start.label
    a_expr, b_expr = (expr.replace("n.", f"{v}.").replace("(n)", f"({v})") for v in ("a", "b"))
    match = f"MATCH {ctx.anchor('a', label)}, {ctx.anchor('b', label, 'other')}"
    rows = ctx.probe(f"{match} RETURN {a_expr} AS a_value, {b_expr} AS b_value", {"start": ctx.start.id, "other": oid})
    if not rows or rows[0][0] is None or rows[0][1] is None or rows[0][0] == rows[0][1]:
        return None
    return oid, oname, a_expr, b_expr, more, what, match


def _compare_instance(
    ctx: TemplateContext, c: tuple[Any, ...], question: str, returned: str, answer_type: str
) -> Instance:
    oid, oname, *_, match = c
    return Instance(
        question,
        [(f"{match} RETURN {returned} AS answer", {"start": ctx.start.id, "other": oid})],
        "scalar",
        answer_type,
        "hybrid",
        anchors=[{"label": ctx.start.label, "id": oid, "name": oname}],
    )


@template("comparison", "boolean", ["boolean"])
def comparison_boolean(ctx: TemplateContext, answer_type: str) -> Instance | None:
    c = _compared(ctx)
    if c is None:
        return None
    oid, oname, a_expr, b_expr, more, _, _ = c
    return _compare_instance(
        ctx,
        c,
        f"Does {_start_mention(ctx)} have {more} than {ctx.mention(ctx.start.label, oname)}?",
        f"{a_expr} > {b_expr}",
        "boolean",
    )


@template("comparison", "property", ["entity"])
def comparison_which(ctx: TemplateContext, answer_type: str) -> Instance | None:
    c = _compared(ctx)
    if c is None:
        return None
    oid, oname, a_expr, b_expr, more, _, _ = c
    name = q(ctx.name(ctx.start.label))
    return _compare_instance(
        ctx,
        c,
        f"Which has {more}: {_start_mention(ctx)} or {ctx.mention(ctx.start.label, oname)}?",
        f"CASE WHEN {a_expr} > {b_expr} THEN a.{name} ELSE b.{name} END",
        "entity",
    )


@template("comparison", "aggregation", ["number"])
def comparison_difference(ctx: TemplateContext, answer_type: str) -> Instance | None:
    c = _compared(ctx)
    if c is None:
        return None
    oid, oname, a_expr, b_expr, _, what, _ = c
    return _compare_instance(
        ctx,
        c,
        f"What is the absolute difference in {what} between {_start_mention(ctx)} and "
        f"{ctx.mention(ctx.start.label, oname)}?",
        f"abs({a_expr} - {b_expr})",
        "number",
    )


@template("comparison", "ranking", ["entity", "number"])
def comparison_rank(ctx: TemplateContext, answer_type: str) -> Instance | None:
    peers, metric = _peers(ctx, 2), _metric(ctx)
    if not peers or metric is None:
        return None
    expr, more, what = metric
    label, name = ctx.start.label, ctx.name(ctx.start.label)
    ids = [ctx.start.id] + [p[0] for p in peers]
    names = [ctx.start.name] + [p[1] for p in peers]
    match = f"MATCH (n:{q(label)}) WHERE n.{q(ctx.pk(label))} IN $ids AND {expr} IS NOT NULL"
    listed = ", ".join(f'"{n}"' for n in names[:-1]) + f' and "{names[-1]}"'
    noun = plural(label_noun(label))
    if answer_type == "entity":
        question = (
            f"Of the {noun} {listed}, which one has the {more.replace('a higher', 'highest').replace('more', 'most')}?"
        )
    else:
        question = f"Of the {noun} {listed}, what is the largest {what}?"
    inst = _rank_instance(ctx, answer_type, match, {"ids": ids}, f"n.{q(name)}", expr, "", "", "hybrid")
    if inst is None:
        return None
    inst.question = question
    inst.anchors = [{"label": label, "id": p[0], "name": p[1]} for p in peers]
    return inst


@template("comparison", "distinct_set", ["set"])
def comparison_difference_set(ctx: TemplateContext, answer_type: str) -> Instance | None:
    peers = _peers(ctx, 1)
    if not peers:
        return None
    oid, oname = peers[0]
    label = ctx.start.label
    for hop in ctx.hops(lo=1, hi=MAX_SET_SIZE * 2):
        inner = hop.pattern("b", "x", here_label=True, there_label=False, here_props=ctx.props(label, "other"))
        text = (
            f"MATCH {ctx.one_hop_pattern(hop)} WHERE NOT EXISTS {{ MATCH {inner} }} "
            f"RETURN DISTINCT x.{q(ctx.name(hop.there))} AS answer"
        )
        a, b = hop.describe(_start_mention(ctx)), hop.describe(ctx.mention(label, oname))
        return Instance(
            f"Which of the {a} are not among the {b}?",
            [(text, {"start": ctx.start.id, "other": oid})],
            "set",
            "set",
            "hybrid",
            anchors=[{"label": label, "id": oid, "name": oname}],
        )
    return None


# ---------------------------------------------------------------------------------------------
# optional_match (zero neighbours allowed)
# ---------------------------------------------------------------------------------------------


def _optional(ctx: TemplateContext, hop: Hop) -> str:
    return f"MATCH {ctx.anchor('s', ctx.start.label)} OPTIONAL MATCH {hop.pattern('s', 'x')}"


@template("optional_match", "aggregation", ["number"])
def optional_count(ctx: TemplateContext, answer_type: str) -> Instance | None:
    for hop in ctx.hops(lo=0):
        text = f"{_optional(ctx, hop)} RETURN count(DISTINCT x) AS answer"
        return Instance(
            f"How many {hop.describe(_start_mention(ctx))} are there (0 if there are none)?",
            [(text, {"start": ctx.start.id})],
            "scalar",
            "number",
            ctx.pattern_of(hop),
        )
    return None


@template("optional_match", "boolean", ["boolean"])
def optional_any(ctx: TemplateContext, answer_type: str) -> Instance | None:
    empty = ctx.hops(lo=0, hi=0)  # hops with no neighbour: the "no" answers, half the time
    for hop in (empty if empty and ctx.rng.random() < 0.5 else []) + ctx.hops(lo=0):
        text = f"{_optional(ctx, hop)} RETURN count(x) > 0 AS answer"
        return Instance(
            f"Are there any {hop.describe(_start_mention(ctx))}?",
            [(text, {"start": ctx.start.id})],
            "scalar",
            "boolean",
            ctx.pattern_of(hop),
        )
    return None


@template("optional_match", "property", ["entity", "number"])
def optional_property(ctx: TemplateContext, answer_type: str) -> Instance | None:
    for hop in ctx.hops(lo=1, hi=1):
        props = numeric_properties(ctx.schema, hop.there) if answer_type == "number" else [ctx.name(hop.there)]
        if not props:
            continue
        prop = ctx.pick(props)
        text = f"{_optional(ctx, hop)} RETURN x.{q(prop)} AS answer"
        target = hop.describe_single(_start_mention(ctx))
        return Instance(
            f"What is the {prop.replace('_', ' ')} of {target}, if there is one?",
            [(text, {"start": ctx.start.id})],
            "single",
            answer_type,
            ctx.pattern_of(hop),
        )
    return None


@template("optional_match", "distinct_set", ["set"])
def optional_set(ctx: TemplateContext, answer_type: str) -> Instance | None:
    for hop in ctx.hops(lo=2, hi=MAX_SET_SIZE):
        text = f"{_optional(ctx, hop)} RETURN collect(DISTINCT x.{q(ctx.name(hop.there))}) AS answer"
        return Instance(
            f"List the {hop.describe(_start_mention(ctx))}, if any.",
            [(text, {"start": ctx.start.id})],
            "collect",
            "set",
            ctx.pattern_of(hop),
        )
    return None


# ---------------------------------------------------------------------------------------------
# shortest_path (undirected: no direction is claimed)
# ---------------------------------------------------------------------------------------------


def _far_node(ctx: TemplateContext) -> tuple[str, Any, str] | None:
    """A node two hops away (half the time) or a random node: ``(label, id, name)``."""
    if ctx.rng.random() < 0.5:
        for h1, h2 in _two_hops(ctx)[:4]:
            pool = ctx.reachable(h1, h2)
            if pool:
                oid, oname = ctx.pick(pool)
                return h2.there, oid, oname
    labels = sorted(ctx.schema.labels)
    label = ctx.pick(labels)
    node = ctx.random_node(label, exclude=ctx.start.id)
    return None if node is None else (label, node[0], node[1])


@template("shortest_path", "aggregation", ["number"])
def shortest_length(ctx: TemplateContext, answer_type: str) -> Instance | None:
    far = _far_node(ctx)
    if far is None:
        return None
    label, oid, oname = far
    text = (
        f"MATCH {ctx.anchor('a', ctx.start.label)}, {ctx.anchor('b', label, 'other')} "
        f"MATCH p = shortestPath((a)-[*..{SHORTEST_MAX_HOPS}]-(b)) RETURN length(p) AS answer"
    )
    return Instance(
        f"Ignoring direction, how many relationships are on a shortest path between {_start_mention(ctx)} "
        f"and {ctx.mention(label, oname)} (at most {SHORTEST_MAX_HOPS})?",
        [(text, {"start": ctx.start.id, "other": oid})],
        "scalar",
        "number",
        "hybrid",
        anchors=[{"label": label, "id": oid, "name": oname}],
    )


@template("shortest_path", "boolean", ["boolean"])
def shortest_within(ctx: TemplateContext, answer_type: str) -> Instance | None:
    far = _far_node(ctx)
    if far is None:
        return None
    label, oid, oname = far
    text = (
        f"MATCH {ctx.anchor('a', ctx.start.label)}, {ctx.anchor('b', label, 'other')} "
        f"OPTIONAL MATCH p = shortestPath((a)-[*..{WITHIN_HOPS}]-(b)) RETURN p IS NOT NULL AS answer"
    )
    return Instance(
        f"Ignoring direction, are {_start_mention(ctx)} and {ctx.mention(label, oname)} connected by a "
        f"path of at most {WITHIN_HOPS} relationships?",
        [(text, {"start": ctx.start.id, "other": oid})],
        "scalar",
        "boolean",
        "hybrid",
        anchors=[{"label": label, "id": oid, "name": oname}],
    )


# ---------------------------------------------------------------------------------------------
# the quizzer
# ---------------------------------------------------------------------------------------------


def _degenerate(value: Any, answer_type: str, max_set: int) -> str | None:
    if value is None:
        return "no unique answer (empty, tie or equal values)"
    if answer_type == "set" and not 1 <= len(value) <= max_set:
        return f"a set of {len(value)} (allowed 1..{max_set})"
    if answer_type == "entity" and not str(value).strip():
        return "an empty entity"
    return None


class TemplateQuizzer:
    """Programmatic quizzer over the axes (see the module docstring).

    ``generate(n)`` returns ``n`` candidates (fewer only when ``max_attempts`` draws run out):
    degenerate draws are skipped (counted in ``stats``); a template whose final program fails
    is emitted as a failed candidate so the failure is visible.
    """

    kind = "template"

    def __init__(
        self,
        query_path: Any,
        schema: GraphSchema,
        *,
        seed: int = 0,
        limits: SandboxLimits | None = None,
        max_set_size: int = MAX_SET_SIZE,
        attempts_per_candidate: int = 20,
    ) -> None:
        self.query_path, self.schema, self.seed = query_path, schema, seed
        self.limits = limits if limits is not None else SandboxLimits()
        self.max_set_size = max_set_size
        self.attempts_per_candidate = attempts_per_candidate
        self.stats: Counter[str] = Counter()

    def _templates_for(self, axes: Axes, rng: np.random.Generator) -> list[Template]:
        """Exact ``(match, return, answer type)`` first, then other match families of the
        difficulty, then any match family, each tier in random order."""
        tiers: list[list[Template]] = [[], [], []]
        for t in TEMPLATES:
            if axes.return_family != t.return_family or axes.answer_type not in t.answer_types:
                continue
            if t.match_family == axes.match_family:
                tiers[0].append(t)
            elif t.match_family in DIFFICULTY_MATCHES[axes.difficulty]:
                tiers[1].append(t)
            else:
                tiers[2].append(t)
        out: list[Template] = []
        for tier in tiers:
            out.extend(tier[i] for i in rng.permutation(len(tier)))
        return out

    def attempt(self, attempt: int, index: int) -> QACandidate | None:
        """One draw: axes, start node, template, final program in the sandbox. ``None`` when
        the draw is skipped (reason counted in ``stats``)."""
        rng = np.random.default_rng([self.seed, attempt])
        axes = sample_axes(rng)
        start = sample_node(self.query_path, self.schema, rng)
        if start is None:
            self.stats["no_start_node"] += 1
            return None
        nb = neighbourhood(self.query_path, self.schema, start)
        ctx = TemplateContext(self.query_path, self.schema, rng, start, nb, axes.question_pattern)
        inst, used = None, None
        for tmpl in self._templates_for(axes, rng):
            inst = tmpl.build(ctx, axes.answer_type)
            if inst is not None:
                used = tmpl
                break
        if inst is None or used is None:
            self.stats["no_template"] += 1
            return None
        return self._run(index, axes, start, nb, inst, used)

    def _run(
        self, index: int, axes: Axes, start: StartNode, nb: dict[str, Any], inst: Instance, tmpl: Template
    ) -> QACandidate | None:
        program = build_program(inst.queries, inst.compute)
        cid = candidate_id(self.seed, index, self.kind)
        t0 = time.perf_counter()
        run = run_final_program(self.query_path, self.schema, program, limits=self.limits, episode_id=cid)
        realized = {
            "answer_type": inst.answer_type,
            "question_pattern": inst.pattern,
            "difficulty": axes.difficulty,
            "match_family": tmpl.match_family,
            "return_family": tmpl.return_family,
        }
        cand = QACandidate(
            id=cid,
            quizzer=self.kind,
            seed=self.seed,
            index=index,
            question=inst.question,
            answer_type=inst.answer_type,
            axes=axes.to_dict(),
            start_node=start.to_dict(),
            neighbourhood=nb,
            trace=[{"kind": "final_program", "code": program, **run.to_dict()}],
            evidence=[t.to_json() for t in run.evidence],
            final_program=program,
            latency_s=round(time.perf_counter() - t0, 4),
            model="template",
            meta={"template": tmpl.name, "realized_axes": realized, "anchors": inst.anchors},
        )
        if run.failure_reason == "truncated_evidence":
            self.stats["degenerate:truncated"] += 1
            return None
        if not run.ok:
            return cand.fail(run.failure_reason or "code_error", run.failure_detail)
        try:
            raw = json.loads(run.printed or "null")
        except ValueError:
            return cand.fail("unparseable_answer", f"printed {run.printed!r}")
        why = _degenerate(raw, inst.answer_type, self.max_set_size)
        if why is not None:
            self.stats["degenerate:" + ("set_size" if "set of" in why else "no_unique")] += 1
            return None
        try:
            value = parse_answer(raw, inst.answer_type)
        except AnswerParseError as exc:
            return cand.fail("unparseable_answer", str(exc))
        if not answer_in_rows(value, inst.answer_type, run.evidence):
            return cand.fail("answer_mismatch", "the answer does not occur in the evidence rows")
        cand.answer_value, cand.answer = value, format_answer(value)
        return cand

    def generate(self, n: int, progress: Callable[[int, int], None] | None = None) -> list[QACandidate]:
        """``n`` candidates for this seed (deterministic on a given graph)."""
        out: list[QACandidate] = []
        for attempt in range(max(1, n) * self.attempts_per_candidate):
            if len(out) >= n:
                break
            try:
                cand = self.attempt(attempt, len(out))
            except GraphError as exc:  # sampling queries failing: skip the draw, never crash
                self.stats[f"graph_error:{exc.code}"] += 1
                continue
            if cand is None:
                continue
            self.stats["ok" if cand.ok else f"failed:{cand.failure_reason}"] += 1
            out.append(cand)
            if progress is not None:
                progress(len(out), n)
        return out
