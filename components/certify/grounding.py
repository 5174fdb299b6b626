"""Direct grounding (what makes a candidate *strict*), cut determinism and the perturbation replay.

**Direct grounding.** Strict requires that the marked evidence *is* the answer: the query does
the selection, Python only moves a value out of the rows (:mod:`components.certify.dataflow`
says which). Direct is exactly one of (:func:`directness`):

* an entity / number / boolean equal to one ``(column, property)`` cell of a **single-row**
  result (``rows[0]`` of ``ORDER BY … LIMIT 1`` included when the order is deterministic at the
  cut — ties are checked);
* a set equal to the complete column — one ``(column, property)`` pair over every row — of a
  complete, untruncated result, or to the members of a single ``collect()`` cell;
* a count equal to the row count of a complete result whose rows are distinct;
* a boolean equal to the emptiness test of a result (``bool(r.rows)``, ``len(r) > 0``).

Anything else that passes the program checks is *partial*: ``selected_from_broader_evidence``
when Python picked the answer out of a broader result (a listing, a row chosen by a Python
comparison, a Python ``max``) and ``derived_value`` when Python computed it (arithmetic, a
comparison in Python); ``counted_duplicate_rows`` for a count of rows that repeat.

**Cuts** (:func:`cut_state`). ``LIMIT`` / ``SKIP`` pick rows. The cut is *deterministic* only when
the final ``ORDER BY`` leaves no tie at it: the query is re-executed with ``SKIP 0`` and
``LIMIT skip + limit + 1`` (sort keys the ``RETURN`` does not project added as extra columns) and
the sort keys on both sides of each cut compared. A cut without ``ORDER BY``, with a tie at the
cut, inside a ``WITH`` / subquery / ``UNION``, or that cannot be checked makes the result an
arbitrary subset — not reproducible on another engine or after a reload: at most partial
(``arbitrary_subset``), never a full set, a count or an equality. A ``LIMIT`` larger than the
result cuts nothing.

**Perturbation replay** (:func:`perturbation_changes`), only where the static data flow is
inconclusive: the final program runs again, in a fresh sandbox episode, on a query path that
returns *perturbed copies* of its queries' re-executed rows — never inside the sandbox kernel.
Perturbations, tried in order until one changes the answer:

1. ``values`` — every string cell gets a suffix, every number ``n`` becomes ``2n + 1``, every
   boolean flips (node, relationship and path properties included, internal keys kept): an
   entity, set member or number copied or aggregated from the rows must change;
2. ``drop_first`` — the first row removed: a count or a selection over rows must change;
3. ``empty`` — every result empty: an emptiness or existence test must change.

A program that prints the same answer under all three (or fails) does not compute its answer
from the evidence: ``hard_coded_answer``. Failing under a perturbation is no evidence either way.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from cypherast import ast as a

from components.certify.dataflow import AnswerFlow
from components.cypher.parse import iter_nodes, parse_query, render
from components.graph.backend import QueryResult
from components.graph.errors import GraphError
from components.graph.values import canonical_json
from components.quizzer.answers import AnswerParseError, answers_agree, normalise_member, parse_printed
from components.tools.cells import pair_columns, row_pairs

__all__ = [
    "CUT_STATES",
    "PERTURBATIONS",
    "Cut",
    "CutPlan",
    "PerturbedQueryPath",
    "cut_plan",
    "cut_state",
    "directness",
    "perturbation_changes",
    "probe_query",
]

CUT_STATES: Final = ("complete", "top", "arbitrary", "unverifiable")
PERTURBATIONS: Final = ("values", "drop_first", "empty")
_AGGREGATES: Final = frozenset(
    {"count", "sum", "avg", "min", "max", "collect", "stdev", "stdevp", "percentilecont", "percentiledisc"}
)
_SUFFIX: Final = "·perturbed"


@dataclass(frozen=True)
class Cut:
    """How a result's rows were chosen: ``complete`` (no cut, or the cut cut nothing), ``top``
    (a deterministic ``ORDER BY … LIMIT``), ``arbitrary`` or ``unverifiable``."""

    state: str
    detail: str = ""

    @property
    def exact(self) -> bool:
        return self.state in ("complete", "top")


# -- cuts ------------------------------------------------------------------------------------


def _int_value(node: Any, params: Mapping[str, Any]) -> int | None:
    if node is None:
        return 0
    inner = node.this
    if isinstance(inner, a.Integer):
        return int(inner.this)
    if isinstance(inner, a.Parameter):
        v = params.get(inner.name)
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    return None


def _sort_columns(ret: a.Return) -> tuple[list[int | None], list[Any]] | None:
    """For each ``ORDER BY`` key: the index of the return item it names (or ``None``), plus the
    unnamed key expressions; ``None`` for ``RETURN *``."""
    items = list(ret.expressions or [])
    if any(isinstance(i, a.Star) for i in items):
        return None
    aliases = {}
    rendered = {}
    for j, item in enumerate(items):
        if isinstance(item, a.Alias):
            aliases[str(item.alias.this)] = j
            rendered[render(item.this)] = j
        else:
            rendered[render(item)] = j
    cols: list[int | None] = []
    extra: list[Any] = []
    for key in ret.order.expressions:
        expr = key.this
        j = aliases.get(str(expr.this)) if isinstance(expr, a.Identifier) else None
        if j is None:
            j = rendered.get(render(expr))
        cols.append(j)
        if j is None:
            extra.append(expr)
    return cols, extra


def _aggregates(nodes: Sequence[Any]) -> bool:
    for item in nodes:
        for n in iter_nodes(item):
            if isinstance(n, a.FunctionCall) and str(n.name).lower() in _AGGREGATES:
                return True
            if type(n).__name__ == "CountStar":
                return True
    return False


@dataclass
class CutPlan:
    """What a query's text says about its cut (computed once per text, :func:`cut_plan`):
    ``fixed`` is the :class:`Cut` when no probe can change it (no cut, or one that cannot be
    checked); otherwise the *probe* — the query with ``SKIP 0``, ``LIMIT skip + limit + 1`` and its
    unprojected sort keys as extra columns — is rendered on demand."""

    fixed: Cut | None
    ret: Any = None
    tree: Any = None
    width: int = 0
    key_positions: tuple[int, ...] = ()
    extra: tuple[Any, ...] = ()
    _texts: dict[int, str] = field(default_factory=dict)

    def bounds(self, params: Mapping[str, Any]) -> tuple[int, int | None] | None:
        """``(skip, limit)`` with the parameters; ``None`` when one is not an integer."""
        limit = None if self.ret.limit is None else _int_value(self.ret.limit, params)
        skip = _int_value(self.ret.skip, params)
        if skip is None or (self.ret.limit is not None and limit is None):
            return None
        return skip, limit

    def probe(self, fetch: int) -> str:
        if fetch not in self._texts:
            copy = self.tree.copy()
            r = copy.this.clauses[-1]
            r.skip = None
            r.limit = a.Limit(this=a.Integer(this=fetch))
            r.expressions = list(r.expressions) + [
                a.Alias(this=e.copy(), alias=a.Identifier(this=f"__gd_key{i}")) for i, e in enumerate(self.extra)
            ]
            self._texts[fetch] = render(copy)
        return self._texts[fetch]


@functools.lru_cache(maxsize=4096)
def cut_plan(query: str) -> CutPlan:
    try:
        tree = parse_query(query).tree
    except GraphError as exc:
        return CutPlan(Cut("unverifiable", f"the query does not parse: {exc}"))
    cuts = [n for n in iter_nodes(tree) if isinstance(n, (a.Limit, a.Skip))]
    if not cuts:
        return CutPlan(Cut("complete"))
    top = tree.this
    ret = top.clauses[-1] if isinstance(top, a.Query) and top.clauses else None
    if not isinstance(ret, a.Return) or any(c is not ret.limit and c is not ret.skip for c in cuts):
        return CutPlan(Cut("unverifiable", "a LIMIT / SKIP inside the query (a WITH, a subquery or a UNION part)"))
    width = len(ret.expressions or [])
    if ret.order is None:
        return CutPlan(None, ret, tree, width)
    mapped = _sort_columns(ret)
    if mapped is None:
        return CutPlan(Cut("unverifiable", "RETURN * with a cut"))
    cols, extra = mapped
    if extra and (ret.distinct or _aggregates(ret.expressions)):
        return CutPlan(Cut("unverifiable", "a sort key outside a DISTINCT / aggregating RETURN"))
    positions, extra_i = [], 0
    for j in cols:
        positions.append(width + extra_i if j is None else j)
        extra_i += j is None
    return CutPlan(None, ret, tree, width, tuple(positions), tuple(extra))


def probe_query(query: str, params: Mapping[str, Any]) -> tuple[str, int, int, int | None, int] | None:
    """The tie-check probe of ``query``: ``(text, fetch, skip, limit, width)``, or ``None`` when the
    query has no checkable cut. Its first ``width`` columns, rows ``skip .. skip + limit``, are
    what ``query`` returns when the cut is deterministic (check 3 uses that to re-execute once)."""
    plan = cut_plan(query)
    bounds = None if plan.fixed is not None else plan.bounds(params)
    if bounds is None:
        return None
    skip, limit = bounds
    if plan.ret.order is None and skip:
        return None  # SKIP without ORDER BY: arbitrary whatever the probe says
    fetch = (skip + limit if limit is not None else skip) + 1
    return plan.probe(fetch), fetch, skip, limit, plan.width


def cut_state(
    query: str,
    params: Mapping[str, Any],
    rows: Sequence[Sequence[Any]],
    query_path: Any,
    probe_rows: Sequence[Sequence[Any]] | None = None,
) -> Cut:
    """How the rows of ``query`` were chosen (see the module docstring). Runs the probe on
    ``query_path`` unless ``probe_rows`` (its rows, from check 3) are given."""
    plan = cut_plan(query)
    if plan.fixed is not None:
        return plan.fixed
    bounds = plan.bounds(params)
    if bounds is None:
        return Cut("unverifiable", "LIMIT / SKIP is not an integer")
    skip, limit = bounds
    if skip == 0 and limit is not None and len(rows) < limit:
        return Cut("complete", f"LIMIT {limit} cuts nothing ({len(rows)} rows)")
    if plan.ret.order is None and skip:
        return Cut("arbitrary", f"SKIP {skip} without ORDER BY")
    if probe_rows is None:
        probe = probe_query(query, params)
        try:
            probe_rows = query_path.run(probe[0], dict(params), limit=probe[1]).rows  # type: ignore[index]
        except GraphError:
            return Cut("unverifiable", "the cut could not be re-checked")
    wide = [list(r) for r in probe_rows]
    end = None if limit is None else skip + limit
    if plan.ret.order is None:
        if len(wide) <= (limit or 0):
            return Cut("complete", f"LIMIT {limit} cuts nothing")
        return Cut("arbitrary", f"LIMIT {limit} without ORDER BY picks an arbitrary subset")

    def key(i: int) -> str:
        return canonical_json([wide[i][p] for p in plan.key_positions])

    for boundary in (skip, end):
        if boundary and 0 < boundary < len(wide) and key(boundary - 1) == key(boundary):
            return Cut("arbitrary", f"a tie in the ORDER BY keys at the cut (rows {boundary} and {boundary + 1})")
    if end is not None and len(wide) <= end and not skip:
        return Cut("complete", "the cut cuts nothing")
    return Cut("top", "ORDER BY … LIMIT with no tie at the cut")


# -- directness ------------------------------------------------------------------------------


def _rows(ev: Any) -> list[Any]:
    return [list(r) for r in (ev.rows if hasattr(ev, "rows") else ev.get("rows") or [])]


def _same(value: Any, cell: Any, answer_type: str) -> bool:
    if answer_type == "boolean":
        return isinstance(cell, bool) and cell is value
    if answer_type == "number":
        return (
            isinstance(cell, (int, float))
            and not isinstance(cell, bool)
            and math.isclose(float(cell), float(value), rel_tol=1e-6, abs_tol=1e-6)
        )
    return normalise_member(cell) == normalise_member(value)


def _single_row_cell(value: Any, answer_type: str, rows: list[Any]) -> bool:
    if len(rows) != 1:
        return False
    for values in row_pairs(rows[0]).values():
        distinct = {canonical_json(v) for v in values}
        if len(distinct) == 1 and _same(value, values[0], answer_type):
            return True
    return False


def _complete_column(value: Sequence[Any], rows: list[Any]) -> bool:
    want = {normalise_member(v) for v in value}
    values, listed = pair_columns(rows)
    for pair, vals in values.items():
        if pair in listed and len(rows) != 1:
            continue  # grouped collect() cells: a union of groups is Python's, not the query's
        if {normalise_member(v) for v in vals} == want:
            return True
    return False


def _occurs(value: Any, answer_type: str, evidence: Sequence[Any]) -> bool:
    for ev in evidence:
        for values in pair_columns(_rows(ev))[0].values():
            if any(_same(value, v, answer_type) for v in values):
                return True
    return False


def directness(value: Any, answer_type: str, evidence: Sequence[Any], flow: AnswerFlow) -> tuple[str | None, str]:
    """``(None, why)`` when the answer is read directly off the evidence, else ``(reason, why)``
    with the partial reason (``selected_from_broader_evidence``, ``derived_value``,
    ``counted_duplicate_rows``). ``evidence`` are the re-run's results (untruncated ones count);
    a result cut arbitrarily is judged as it stands — :func:`cut_state` gives the caller its own
    reason, ``arbitrary_subset``."""
    exact = [_rows(ev) for ev in evidence if not getattr(ev, "truncated", False)]
    occurs = answer_type != "boolean" and (
        all(_occurs(v, "entity", evidence) for v in value)
        if answer_type == "set"
        else _occurs(value, answer_type, evidence)
    )
    picked = "selected_from_broader_evidence" if occurs else "derived_value"
    if flow.computed:
        return (
            picked,
            f"Python {'selects' if occurs else 'computes'} the answer ({', '.join(sorted(flow.ops)) or 'literal'})",
        )
    if answer_type == "set":
        if any(_complete_column(value, rows) for rows in exact):
            return None, "the set is a complete column of the evidence"
        return "selected_from_broader_evidence", "no complete column of the evidence equals the set"
    if answer_type == "boolean" and flow.emptiness:
        if any(bool(rows) is value for rows in exact) or any(
            getattr(ev, "truncated", False) and value is True for ev in evidence
        ):
            return None, "the answer is the emptiness test of the evidence"
        return "derived_value", "the emptiness test does not give the answer"
    if any(_single_row_cell(value, answer_type, rows) for rows in exact):
        return None, "the answer is a cell of a single-row result"
    if answer_type == "number" and isinstance(value, int):
        counted = [rows for rows in exact if len(rows) == value]
        if counted:
            if any(len({canonical_json(r) for r in rows}) == len(rows) for rows in counted):
                return None, "the answer is the row count of a complete result"
            return "counted_duplicate_rows", "the answer counts rows that repeat (DISTINCT missing?)"
    return picked, (
        "the answer is one value of a broader result" if occurs else "the answer is not a cell of the evidence"
    )


# -- the perturbation replay -----------------------------------------------------------------


def _perturb(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return 2 * value + 1
    if isinstance(value, float):
        return 2.0 * value + 1.0
    if isinstance(value, str):
        return value + _SUFFIX
    if isinstance(value, list):
        return [_perturb(v) for v in value]
    if isinstance(value, Mapping):
        return {k: (v if str(k).startswith("_") else _perturb(v)) for k, v in value.items()}
    return value


class PerturbedQueryPath:
    """A query path that answers every query with a perturbed copy of ``inner``'s result
    (``mode`` one of :data:`PERTURBATIONS`)."""

    def __init__(self, inner: Any, mode: str) -> None:
        if mode not in PERTURBATIONS:
            raise ValueError(f"unknown perturbation {mode!r}")
        self.inner, self.mode = inner, mode

    def run(
        self, query: str, params: Mapping[str, Any] | None = None, *, limit: int | None = None, **options: Any
    ) -> QueryResult:
        res = self.inner.run(query, params, limit=limit, **options)
        rows = [list(r) for r in res.rows]
        if self.mode == "values":
            rows = [[_perturb(c) for c in r] for r in rows]
        elif self.mode == "drop_first":
            rows = rows[1:]
        else:
            rows = []
        return QueryResult(tuple(res.columns), tuple(tuple(r) for r in rows), bool(res.truncated) and bool(rows))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def perturbation_changes(
    program: str,
    original: Any,
    answer_type: str,
    query_path: Any,
    schema: Any,
    *,
    limits: Any = None,
    episode_id: str | None = None,
    server: Any = None,
) -> tuple[bool, str]:
    """Whether ``program``'s printed answer changes when its queries' rows are perturbed (see the
    module docstring): ``(changed, which perturbation showed it or why not)``."""
    from components.quizzer.final import run_final_program

    for mode in PERTURBATIONS:
        run = run_final_program(
            PerturbedQueryPath(query_path, mode), schema, program, limits=limits, episode_id=episode_id, server=server
        )
        if run.error is not None or run.printed is None:
            continue  # a program that fails here says nothing about where its answer comes from
        try:
            again = parse_printed(run.printed, answer_type)
        except AnswerParseError:
            return True, f"under '{mode}' the program prints no {answer_type} answer"
        if not answers_agree(again, original, answer_type):
            return True, f"the answer changes under '{mode}'"
    return False, "the answer stays the same whatever the rows hold"
