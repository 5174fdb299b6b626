"""The Cypher feature deriver: what a read query *structurally* is, invariant to surface form.

:func:`derive` turns one Neo4j-dialect query (optionally with a :class:`GraphSchema`) into a
:class:`Derivation` — the features of the evidence rubric (docs/rubric.md) and the match / return family
the query really has — or into an explicit :class:`DerivationError`; a failure is never an
empty success. Results are cached by ``(query, schema endpoint fingerprint)``.

Invariances
-----------
Variable names, aliases (``RETURN p.title AS t`` ≡ ``RETURN x.title``; ``WITH count(a) AS c RETURN
c`` ≡ ``RETURN count(a)``), the order of independent MATCH clauses and of patterns inside a MATCH,
the order of AND-ed predicates, how a direction is written (``(a)<-[:R]-(b)`` ≡ ``(b)-[:R]->(a)``),
``(p:Paper)`` vs ``(p) … WHERE p:Paper``, inline property maps vs ``WHERE v.prop = value`` (same
``nodes`` and ``ops``), the case of function names.

Canonical variable names
------------------------
Every node variable gets ``<label>#k`` (``Paper#1``; ``*#k`` when unlabelled, ``A:B#k`` for several
labels), relationship variables ``[<type>]#k``, path variables ``path#k``, UNWIND variables
``unwind#k`` (clause order), comprehension / quantifier variables ``_it``. ``k`` numbers the
variables of one label by a structural colour — colour refinement (1-dimensional Weisfeiler–Lehman)
over the pattern graph, seeded with label, the variable's own constraints (inline map entries and
WHERE conjuncts that mention only it, rendered with the variable blanked) and the context (MATCH /
OPTIONAL MATCH / sub-pattern); variables still tied are separated by where they appear in the
final RETURN / ORDER BY — and only then by first appearance (which then only matters for truly
symmetric variables). Projection aliases are replaced by the canonical text of what they alias.
Scoping is per query part (UNION branch); a name re-bound to a different thing later in the same
branch is not tracked.

Features (exact contents)
-------------------------
Multisets are **sorted tuples with repeats** (``collections.Counter(t)`` gives the bag).

* ``patterns`` — one :class:`PatternFeature` ``(source, type, target, min_hops, max_hops,
  directed)`` per relationship pattern anywhere in the query (MATCH, OPTIONAL MATCH, EXISTS / pattern
  predicates, COUNT { }, pattern comprehensions, CALL { } subqueries). ``source``/``target`` are
  endpoint labels (see below), ``type`` is the relationship type (``A|B`` sorted, ``*`` for none).
  Incoming patterns are reversed into outgoing ones; an undirected one has ``directed=False`` and its
  two endpoints sorted. Hops: a plain relationship is ``(1, 1)``; ``*`` → ``(1, UNBOUNDED)``,
  ``*2..`` → ``(2, UNBOUNDED)``, ``*..3`` → ``(1, 3)``, ``*2`` → ``(2, 2)``; ``UNBOUNDED == -1``.
* endpoint labels — the labels the variable has anywhere in the query (any of its node patterns,
  or a top-level ``WHERE v:Label`` conjunct; ``A:B`` sorted for several, a label expression such as
  ``A|B`` verbatim); if none, the schema: the set of labels that can sit on that side of every
  incident typed relationship (intersected; either side for undirected), when exactly one; else ``*``.
* ``nodes`` — :class:`NodeFeature` ``(label, "")`` once per node variable anywhere in the query
  (sub-patterns included; each anonymous node pattern counts once), plus ``(label, property)`` once
  per node variable and property constrained by an inline map or a top-level WHERE equality
  ``v.prop = …`` / ``… = v.prop``.
* ``returns`` — the final RETURN's columns in order, each the canonical text of the expression
  (aliases dropped, variables renamed, function names lower-cased, aggregates keep ``DISTINCT``,
  sub-patterns in their lexicographically smaller writing direction). ``RETURN *`` expands to the
  visible variables sorted by canonical name.
* ``shape`` — per column a kind: ``property``, ``aggregate`` (an aggregate function anywhere in it,
  or ``COUNT { }``), ``boolean`` (comparison, boolean operator, predicate, EXISTS), ``node``,
  ``relationship``, ``path``, ``list``, ``literal`` (literal or parameter), ``expression``
  (anything else). ``columns`` is ``len(shape)``.
* ``properties`` — the set (sorted, unique) of :class:`PropertyFeature` ``(owner, property)``:
  every ``v.prop`` anywhere (RETURN, WITH, WHERE, ORDER BY, inside functions …), inline map keys on
  node and relationship patterns, and map-projection selectors; ``owner`` is ``v``'s label (node) or
  type (relationship), ``*`` when unknown.
* ``distinct`` — RETURN DISTINCT, WITH DISTINCT, or an aggregate with DISTINCT.
* ``order`` — the ORDER BY keys ``(canonical expression, "ASC"|"DESC")`` of the last projection
  (WITH or RETURN) that orders; ``limit`` / ``skip`` — the value of the last projection that has
  one: an ``int`` for a literal, ``"$name"`` for a parameter, canonical text otherwise; ``None``.
* ``ops`` — the multiset of operations (one per occurrence): ``filter`` (each top-level WHERE
  conjunct — except ``v:Label`` conjuncts, which are labels — and each inline property-map entry),
  ``aggregation`` (each aggregate call), ``count`` (each ``count()`` / ``COUNT { }``), ``distinct``
  (each DISTINCT projection / aggregate, UNION without ALL), ``order``, ``limit``, ``skip``,
  ``optional`` (OPTIONAL MATCH), ``with`` (WITH clause), ``union``, ``subquery`` (CALL { }),
  ``exists`` (pattern predicate, EXISTS { }, ``exists()``), ``shortest_path``, ``var_length``,
  ``comparison`` (``< > <= >=``), ``negation`` (NOT, ``<>``, negated pattern predicate),
  ``null_check`` (IS [NOT] NULL), ``disjunction`` (OR / XOR), ``list_op`` (IN, UNWIND, list /
  pattern comprehension, quantifier, ``reduce``…), ``string_op`` (CONTAINS, STARTS WITH, ENDS WITH,
  ``=~``), ``case``, ``arithmetic``.

Families (first rule that applies wins)
---------------------------------------
Match family — over the *pattern graph* of the MATCH / OPTIONAL MATCH clauses (CALL { } included,
sub-patterns of predicates excluded). An **anchor** is a node variable with a constraint of its
own: an inline map entry whose value mentions no variable, or a WHERE conjunct that mentions only
that variable (label conjuncts excluded).

1. ``shortest_path`` — shortestPath / allShortestPaths anywhere.
2. ``optional_match`` — any OPTIONAL MATCH.
3. ``comparison`` — an ordering comparison (``< > <= >=``) in a WHERE / WITH / RETURN, or ``=`` / ``<>`` in a WITH /
   RETURN projection, whose two sides each depend on pattern variables, on different sets of them
   (``a.year > b.year``, ``count(x) > count(y)``, ``RETURN a.age = b.age``); or at least two
   connected components of the pattern graph that each contain an anchor (two anchored
   sub-queries side by side).
4. ``intersection`` — a node of the pattern graph where at least two relationship branches meet
   whose far sides (the components left after removing that node) are different and each contain an
   anchor (``(a {…})-[:R]->(x)<-[:S]-(b {…})``).
5. ``multi_hop`` — a connected component with ≥ 2 relationships, or a variable-length relationship
   that is not exactly one hop.
6. ``one_hop`` — everything else (one relationship, or a lookup with none).

Return family — over the final RETURN (UNION: all branches agree, else the highest priority):

1. ``boolean`` — every column is boolean (``RETURN count(x) > 0``, ``RETURN EXISTS { … }``).
2. ``ranking`` — some projection has ORDER BY and it or a later projection has LIMIT.
3. ``aggregation`` — some column is an aggregate.
4. ``distinct_set`` — RETURN DISTINCT.
5. ``property`` — everything else.

Failures
--------
:class:`DerivationError` codes: ``empty_query``; ``syntax_error`` / ``unsafe_query`` /
``dialect_divergence`` (the parser layer's :class:`GraphError` codes); ``unsupported`` (writes,
procedure calls, admin statements, a query part not ending in RETURN, constructs the deriver does
not model); ``internal_error`` (a bug here — reported, never hidden as a success).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar, NamedTuple

from cypherast import ast as a

from components.cypher.parse import CypherRenderer, child_nodes, iter_nodes, parse_query
from components.cypher.schema_check import _label_names
from components.graph.errors import GraphError
from components.graph.schema import GraphSchema

__all__ = [
    "AGGREGATES",
    "MATCH_FAMILIES",
    "RETURN_FAMILIES",
    "UNBOUNDED",
    "Derivation",
    "DerivationError",
    "NodeFeature",
    "OrderKey",
    "PatternFeature",
    "PropertyFeature",
    "derive",
    "features_json",
]

#: ``max_hops`` of an unbounded variable-length relationship (``*``, ``*2..``).
UNBOUNDED = -1

MATCH_FAMILIES = (
    "one_hop",
    "multi_hop",
    "intersection",
    "comparison",
    "optional_match",
    "shortest_path",
)
RETURN_FAMILIES = ("property", "distinct_set", "aggregation", "ranking", "boolean")

#: Aggregate functions (lower-case names).
AGGREGATES = frozenset(
    {"count", "sum", "avg", "min", "max", "collect", "stdev", "stdevp", "percentilecont", "percentiledisc"}
)

_ANY = "*"


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


class PatternFeature(NamedTuple):
    """A typed relationship pattern, written outgoing (``directed=False``: endpoints sorted)."""

    source: str
    type: str
    target: str
    min_hops: int
    max_hops: int  # UNBOUNDED (-1) when unbounded
    directed: bool


class NodeFeature(NamedTuple):
    """A participating node ``(label, "")`` or a constrained property ``(label, property)``."""

    label: str
    property: str


class PropertyFeature(NamedTuple):
    """A property used: ``owner`` is the node label or relationship type (``*`` unknown)."""

    owner: str
    property: str


class OrderKey(NamedTuple):
    expression: str
    direction: str  # "ASC" | "DESC"


Limit = int | str | None


@dataclass(frozen=True, slots=True)
class Derivation:
    """A successful derivation; every field is hashable, multisets are sorted tuples."""

    patterns: tuple[PatternFeature, ...]
    nodes: tuple[NodeFeature, ...]
    returns: tuple[str, ...]
    shape: tuple[str, ...]
    properties: tuple[PropertyFeature, ...]
    distinct: bool
    order: tuple[OrderKey, ...]
    limit: Limit
    skip: Limit
    ops: tuple[str, ...]
    match_family: str
    return_family: str

    ok: ClassVar[bool] = True

    @property
    def columns(self) -> int:
        return len(self.shape)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "patterns": [list(p) for p in self.patterns],
            "nodes": [list(n) for n in self.nodes],
            "returns": list(self.returns),
            "shape": {"columns": self.columns, "kinds": list(self.shape)},
            "properties": [list(p) for p in self.properties],
            "distinct": self.distinct,
            "order": [list(o) for o in self.order],
            "limit": self.limit,
            "skip": self.skip,
            "ops": list(self.ops),
            "match_family": self.match_family,
            "return_family": self.return_family,
        }


@dataclass(frozen=True, slots=True)
class DerivationError:
    """A failed derivation (scores 0 in the rubric)."""

    code: str
    message: str

    ok: ClassVar[bool] = False

    def to_json(self) -> dict[str, Any]:
        return {"ok": False, "code": self.code, "message": self.message}


class _Unsupported(Exception):
    pass


# --------------------------------------------------------------------------------------------
# Small AST helpers
# --------------------------------------------------------------------------------------------

_UNSUPPORTED_NODES: dict[type[a.AstNode], str] = {
    a.Create: "CREATE",
    a.Merge: "MERGE",
    a.Set: "SET",
    a.Delete: "DELETE",
    a.Remove: "REMOVE",
    a.RemoveLabels: "REMOVE",
    a.Foreach: "FOREACH",
    a.Insert: "INSERT",
    a.LoadCsv: "LOAD CSV",
    a.CallProcedure: "procedure CALL",
    a.AdminStatement: "admin statement",
    a.WhenQuery: "WHEN … THEN composition",
    a.Next: "NEXT",
    a.Let: "LET",
    a.Filter: "FILTER",
    a.For: "FOR",
    a.Search: "SEARCH",
    a.QuantifiedPath: "quantified path pattern",
    a.GroupBy: "GROUP BY",
    a.Use: "USE",
}

_BOOLEAN_NODES = (
    a.EQ,
    a.NEQ,
    a.LT,
    a.LTE,
    a.GT,
    a.GTE,
    a.And,
    a.Or,
    a.Xor,
    a.Not,
    a.IsNull,
    a.In,
    a.StartsWith,
    a.EndsWith,
    a.Contains,
    a.RegexMatch,
    a.PatternPredicate,
    a.Quantifier,
    a.LabelPredicate,
)
_LITERALS = (a.Integer, a.Float, a.String, a.Boolean, a.Null, a.Parameter)
_LIST_FUNCTIONS = frozenset({"nodes", "relationships", "labels", "keys", "range", "split", "tail", "reverse"})
_OP_OF_TYPE: dict[type[a.AstNode], str] = {
    a.LT: "comparison",
    a.LTE: "comparison",
    a.GT: "comparison",
    a.GTE: "comparison",
    a.Not: "negation",
    a.NEQ: "negation",
    a.IsNull: "null_check",
    a.Or: "disjunction",
    a.Xor: "disjunction",
    a.In: "list_op",
    a.Unwind: "list_op",
    a.ListComprehension: "list_op",
    a.PatternComprehension: "list_op",
    a.Quantifier: "list_op",
    a.ListLambda: "list_op",
    a.StartsWith: "string_op",
    a.EndsWith: "string_op",
    a.Contains: "string_op",
    a.RegexMatch: "string_op",
    a.Case: "case",
    a.Add: "arithmetic",
    a.Sub: "arithmetic",
    a.Mul: "arithmetic",
    a.Div: "arithmetic",
    a.Mod: "arithmetic",
    a.Pow: "arithmetic",
    a.Neg: "arithmetic",
    a.ShortestPath: "shortest_path",
    a.CallSubquery: "subquery",
    a.With: "with",
    a.CountSubquery: "count",
}


def _conjuncts(expr: a.AstNode | None) -> list[a.AstNode]:
    if expr is None:
        return []
    if isinstance(expr, a.Where):
        return _conjuncts(expr.this)
    if isinstance(expr, a.And):
        return _conjuncts(expr.this) + _conjuncts(expr.expression)
    return [expr]


def _func_name(node: a.FunctionCall) -> str:
    return str(node.name).lower()


def _is_aggregate(node: a.AstNode) -> bool:
    return isinstance(node, a.FunctionCall) and _func_name(node) in AGGREGATES


def _var(node: a.AstNode | None) -> str | None:
    return None if node is None else str(node.this)


def _elements(path: a.PathPattern) -> tuple[list[a.AstNode], bool]:
    """The node/relationship elements of a path and whether it is a shortest path."""
    if len(path.elements) == 1 and isinstance(path.elements[0], a.ShortestPath):
        return list(path.elements[0].this.elements), True
    return list(path.elements), False


def _identifiers(expr: a.AstNode) -> set[str]:
    return {str(n.this) for n in iter_nodes(expr) if isinstance(n, a.Identifier)}


def _label_set(labels: a.LabelExpression | None) -> tuple[set[str], set[str]]:
    """(plain labels, label expressions)."""
    if labels is None:
        return set(), set()
    if labels.expression is not None:
        return set(), {str(labels.expression)}
    return set(_label_names(labels)), set()


def _hops(rel: a.RelationshipPattern) -> tuple[int, int]:
    if not rel.variable_length:
        return 1, 1
    low = 1 if rel.min_hops is None else int(rel.min_hops)
    high = UNBOUNDED if rel.max_hops is None else int(rel.max_hops)
    return low, high


def _rel_type(rel: a.RelationshipPattern) -> str:
    return "|".join(sorted(str(t) for t in rel.types)) if rel.types else _ANY


# --------------------------------------------------------------------------------------------
# Canonical rendering
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Sym:
    """What a name stands for in a projection pipeline."""

    text: str
    kind: str  # node / relationship / path / expression kinds
    roots: frozenset[str]  # canonical names of the pattern variables it depends on
    atomic: bool = True
    agg: bool = False


_ATOMIC = (
    a.Identifier,
    a.Property,
    a.FunctionCall,
    a.CountSubquery,
    a.Parameter,
    a.List,
    a.Map,
    a.MapProjection,
    a.Integer,
    a.Float,
    a.String,
    a.Boolean,
    a.Null,
    a.ListComprehension,
    a.PatternComprehension,
    a.Quantifier,
    a.Coalesce,
    a.Case,
)


class _CanonRenderer(CypherRenderer):
    """Renders expressions with variables replaced by their canonical texts."""

    def __init__(self, env: Mapping[str, _Sym]) -> None:
        self.env = env

    def text(self, node: a.AstNode) -> str:
        return self.generate(node)

    def render_Identifier(self, node: a.Identifier) -> str:
        name = str(node.this)
        sym = self.env.get(name)
        if sym is not None:
            return sym.text if sym.atomic else f"({sym.text})"
        return "?"  # unbound (an invalid query): never the raw name, which is not invariant

    def render_Alias(self, node: a.Alias) -> str:
        return self.dispatch(node.this)

    def render_FunctionCall(self, node: a.FunctionCall) -> str:
        name = str(node.name)
        if "." not in name:
            name = name.lower()
        distinct = "DISTINCT " if node.distinct else ""
        args = ", ".join(self.dispatch(e) for e in node.expressions)
        return f"{name}({distinct}{args})"

    def render_PathPattern(self, node: a.PathPattern) -> str:
        parts = [self.dispatch(e) for e in node.elements]
        forward = "".join(parts)
        backward = "".join(_flip(p) for p in reversed(parts))
        body = min(forward, backward)
        if node.variable:
            return f"{self.dispatch(node.variable)} = {body}"
        return body

    def render_CountSubquery(self, node: a.CountSubquery) -> str:
        query = node.query
        body = f"MATCH {self.dispatch(query)}" if isinstance(query, a.PathPattern) else (self.dispatch(query))
        return f"COUNT {{ {body} }}"


def _flip(part: str) -> str:
    """Reverse the writing direction of a rendered relationship (nodes pass unchanged)."""
    if part.startswith("("):
        return part
    if part.endswith("->"):
        return "<" + part[:-1]
    if part.startswith("<-"):
        return part[1:] + ">"
    return part


def _kind(expr: a.AstNode, env: Mapping[str, _Sym]) -> str:
    if isinstance(expr, a.Alias):
        return _kind(expr.this, env)
    if isinstance(expr, _BOOLEAN_NODES) or (
        isinstance(expr, a.FunctionCall) and _func_name(expr) in {"exists", "isempty"}
    ):
        return "boolean"
    if _has_aggregate(expr, env):
        return "aggregate"
    if isinstance(expr, a.Identifier):
        sym = env.get(str(expr.this))
        return "expression" if sym is None else sym.kind
    if isinstance(expr, a.Property):
        return "property"
    if isinstance(expr, _LITERALS):
        return "literal"
    if isinstance(expr, (a.List, a.ListComprehension, a.PatternComprehension, a.ListSlice)) or (
        isinstance(expr, a.FunctionCall) and _func_name(expr) in _LIST_FUNCTIONS
    ):
        return "list"
    return "expression"


def _has_aggregate(expr: a.AstNode, env: Mapping[str, _Sym]) -> bool:
    stack = [expr]
    while stack:
        node = stack.pop()
        if _is_aggregate(node) or isinstance(node, a.CountSubquery):
            return True
        if isinstance(node, a.Identifier):
            sym = env.get(str(node.this))
            if sym is not None and sym.agg:
                return True
        if isinstance(node, (a.PatternComprehension, a.PatternPredicate)):
            continue
        stack.extend(child_nodes(node))
    return False


def _roots(expr: a.AstNode, env: Mapping[str, _Sym]) -> frozenset[str]:
    out: set[str] = set()
    for name in _identifiers(expr):
        sym = env.get(name)
        if sym is not None:
            out |= sym.roots
    return frozenset(out)


# --------------------------------------------------------------------------------------------
# Schema fingerprint (only the endpoints matter)
# --------------------------------------------------------------------------------------------

_Ends = tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]
_SCHEMA_KEYS: dict[int, tuple[weakref.ref[GraphSchema], _Ends]] = {}


def _schema_ends(schema: GraphSchema | None) -> _Ends:
    if schema is None:
        return ()
    cached = _SCHEMA_KEYS.get(id(schema))
    if cached is not None and cached[0]() is schema:
        return cached[1]
    ends = tuple(
        sorted(
            (r.type, tuple(sorted({t.source for t in r.triples})), tuple(sorted({t.target for t in r.triples})))
            for r in schema.rel_types
        )
    )
    try:
        _SCHEMA_KEYS[id(schema)] = (weakref.ref(schema), ends)
    except TypeError:  # pragma: no cover - not weak-referenceable
        pass
    if len(_SCHEMA_KEYS) > 256:
        for key in [k for k, (ref, _) in _SCHEMA_KEYS.items() if ref() is None]:
            del _SCHEMA_KEYS[key]
    return ends


# --------------------------------------------------------------------------------------------
# One query part (UNION branch)
# --------------------------------------------------------------------------------------------


@dataclass
class _Node:
    key: str  # variable name, or "#anon<i>"
    named: bool
    order: int  # first appearance
    plain: set[str] = field(default_factory=set)
    exprs: set[str] = field(default_factory=set)
    ctx: set[str] = field(default_factory=set)
    inline: list[tuple[str, a.AstNode]] = field(default_factory=list)
    label: str = _ANY
    name: str = ""


@dataclass
class _Edge:
    rel: a.RelationshipPattern
    left: str
    right: str
    ctx: str  # "match" | "optional" | "sub"
    order: int
    var: str | None

    def oriented(self) -> tuple[str, str, bool]:
        """(source key, target key, directed)."""
        d = self.rel.direction
        if d is a.Direction.INCOMING:
            return self.right, self.left, True
        return self.left, self.right, d is a.Direction.OUTGOING


@dataclass
class _Part:
    """Derived features of one branch, before merging UNION branches."""

    patterns: list[PatternFeature]
    nodes: list[NodeFeature]
    returns: list[str]
    shape: list[str]
    properties: set[PropertyFeature]
    distinct: bool
    order: tuple[OrderKey, ...]
    limit: Limit
    skip: Limit
    ops: list[str]
    match_family: str
    return_family: str


@dataclass
class _Projection:
    columns: list[tuple[str, str, frozenset[str]]]  # (text, kind, roots)
    order: tuple[OrderKey, ...]
    limit: Limit
    skip: Limit
    ordered_then_limited: bool
    return_distinct: bool
    comparisons: list[tuple[frozenset[str], frozenset[str]]]


class _Branch:
    def __init__(self, query: a.Query, ends: _Ends) -> None:
        self.query = query
        self.ends = {t: (set(s), set(d)) for t, s, d in ends}
        self.nodes: dict[str, _Node] = {}
        self.edges: list[_Edge] = []
        self.paths: list[tuple[str, bool, list[str]]] = []  # (var, shortest, node keys)
        self.rel_vars: dict[str, _Edge] = {}
        self.unwinds: list[str] = []
        self.locals: set[str] = set()  # comprehension / quantifier variables -> "_it"
        self.accumulators: set[str] = set()  # reduce() accumulators -> "_acc"
        self.label_conjuncts: set[int] = set()  # id() of WHERE v:Label conjuncts used as labels
        self.where: list[a.AstNode] = []  # every WHERE conjunct (any clause)
        self.ops: list[str] = []
        self.counter = 0
        self.own: dict[str, list[Any]] = {}
        self.sig: dict[str, tuple[str, ...]] = {}
        self.all: list[a.AstNode] = []  # every expression / clause node _visit saw

    @property
    def local_names(self) -> set[str]:
        return self.locals | self.accumulators

    def local_env(self) -> dict[str, _Sym]:
        env = {n: _Sym("_it", "expression", frozenset()) for n in self.locals}
        env.update({n: _Sym("_acc", "expression", frozenset()) for n in self.accumulators})
        return env

    # -- collection -----------------------------------------------------------------------

    def collect(self) -> None:
        clauses = self.query.clauses or []
        if not clauses or not isinstance(clauses[-1], a.Return):
            raise _Unsupported("a query part must end with RETURN")
        self._visit(self.query, "match")

    def _node_entity(self, np: a.NodePattern, ctx: str) -> str:
        if np.variable is not None:
            key = _var(np.variable)
            assert key is not None
            node = self.nodes.get(key)
            if node is None:
                node = self.nodes[key] = _Node(key, True, self.counter)
                self.counter += 1
        else:
            key = f"#anon{self.counter}"
            node = self.nodes[key] = _Node(key, False, self.counter)
            self.counter += 1
        plain, exprs = _label_set(np.labels)
        node.plain |= plain
        node.exprs |= exprs
        node.ctx.add(ctx)
        if isinstance(np.properties, a.Map):
            node.inline.extend((str(k), v) for k, v in np.properties.entries)
            self.ops.extend("filter" for _ in np.properties.entries)
        elif np.properties is not None:  # $param map
            self.ops.append("filter")
        if np.where is not None:
            self._where(np.where)
        return key

    def _path(self, path: a.PathPattern, ctx: str) -> None:
        elements, shortest = _elements(path)
        keys: list[str] = []
        for el in elements:
            if isinstance(el, a.NodePattern):
                keys.append(self._node_entity(el, ctx))
            elif not isinstance(el, a.RelationshipPattern):
                raise _Unsupported(f"pattern element {type(el).__name__}")
        for i in range(1, len(elements) - 1, 2):
            rel = elements[i]
            if not isinstance(rel, a.RelationshipPattern):
                raise _Unsupported(f"pattern element {type(rel).__name__}")
            edge = _Edge(rel, keys[i // 2], keys[i // 2 + 1], ctx, self.counter, _var(rel.variable))
            self.counter += 1
            self.edges.append(edge)
            if edge.var is not None:
                self.rel_vars.setdefault(edge.var, edge)
            if rel.variable_length:
                self.ops.append("var_length")
            if isinstance(rel.properties, a.Map):
                self.ops.extend("filter" for _ in rel.properties.entries)
            if rel.where is not None:
                self._where(rel.where)
        if path.variable is not None:
            self.paths.append((str(path.variable.this), shortest, keys))

    def _where(self, where: a.AstNode) -> None:
        for conj in _conjuncts(where):
            self.where.append(conj)
            if isinstance(conj, a.LabelPredicate) and isinstance(conj.this, a.Identifier) and conj.labels is not None:
                self.label_conjuncts.add(id(conj))
            else:
                self.ops.append("filter")

    def _visit(self, node: a.AstNode, ctx: str) -> None:
        self.all.append(node)
        typ = type(node)
        if typ in _UNSUPPORTED_NODES:
            raise _Unsupported(f"{_UNSUPPORTED_NODES[typ]} is not supported by the deriver")
        op = _OP_OF_TYPE.get(typ)
        if op is not None:
            self.ops.append(op)
        if isinstance(node, a.Match):
            if node.optional:
                self.ops.append("optional")
            sub = ctx if ctx == "sub" else ("optional" if node.optional else "match")
            for path in node.pattern.paths:
                self._path(path, sub)
            if node.where is not None:
                self._where(node.where)
            for conj in _conjuncts(node.where):
                self._visit(conj, sub)
            for path in node.pattern.paths:
                for child in child_nodes(path):
                    self._visit_pattern_children(child, "sub")
            return
        if isinstance(node, (a.PatternPredicate, a.CountSubquery, a.PatternComprehension)):
            if isinstance(node, a.PatternPredicate):
                self.ops.append("exists")
                if node.not_:
                    self.ops.append("negation")
            inner = node.pattern if not isinstance(node, a.CountSubquery) else node.query
            if isinstance(inner, a.PathPattern):
                self._path(inner, "sub")
                for child in child_nodes(inner):
                    self._visit_pattern_children(child, "sub")
            else:
                self._visit(inner, "sub")
            for key in ("where", "projection"):
                value = node.args.get(key)
                if value is not None:
                    if key == "where":
                        self._where(value)
                    self._visit(value, "sub")
            return
        if isinstance(node, a.PathPattern):  # outside MATCH (should not happen)
            self._path(node, "sub")
            return
        if isinstance(node, (a.With, a.Return)):
            if node.distinct:
                self.ops.append("distinct")
            if node.order is not None:
                self.ops.append("order")
            if node.skip is not None:
                self.ops.append("skip")
            if node.limit is not None:
                self.ops.append("limit")
            if isinstance(node, a.With) and node.where is not None:
                self._where(node.where)
        elif isinstance(node, a.Unwind):
            self.unwinds.append(str(node.alias.this))
        elif isinstance(node, a.FunctionCall):
            name = _func_name(node)
            if name in AGGREGATES:
                self.ops.append("aggregation")
                if name == "count":
                    self.ops.append("count")
                if node.distinct:
                    self.ops.append("distinct")
            elif name == "exists":
                self.ops.append("exists")
        elif isinstance(node, (a.ListComprehension, a.Quantifier, a.ListLambda)):
            self.locals.add(str(node.variable.this))
            if isinstance(node, a.ListLambda) and node.accumulator is not None:
                self.accumulators.add(str(node.accumulator.this))
        for child in child_nodes(node):
            self._visit(child, ctx)

    def _visit_pattern_children(self, node: a.AstNode, ctx: str) -> None:
        """Expressions inside pattern elements (inline maps, inline WHERE): ops only."""
        if isinstance(node, (a.NodePattern, a.RelationshipPattern, a.ShortestPath, a.PathPattern, a.LabelExpression)):
            if isinstance(node, a.ShortestPath):
                self.all.append(node)
                self.ops.append("shortest_path")
            for child in child_nodes(node):
                self._visit_pattern_children(child, ctx)
            return
        if isinstance(node, a.Where):
            for conj in _conjuncts(node):
                self._visit(conj, ctx)
            return
        if isinstance(node, a.Map):
            for _k, value in node.entries:
                self._visit(value, ctx)
            return
        if isinstance(node, a.Identifier):
            return
        self._visit(node, ctx)

    # -- labels ---------------------------------------------------------------------------

    def resolve_labels(self) -> None:
        for conj in self.where:
            if id(conj) in self.label_conjuncts:
                node = self.nodes.get(str(conj.this.this))
                if node is not None:
                    plain, exprs = _label_set(conj.labels)
                    node.plain |= plain
                    node.exprs |= exprs
        for node in self.nodes.values():
            names = sorted(node.plain | node.exprs)
            if names:
                node.label = ":".join(names)
        if not self.ends:
            return
        candidates: dict[str, set[str] | None] = {}
        for edge in self.edges:
            types = [str(t) for t in edge.rel.types or []]
            if not types or any(t not in self.ends for t in types):
                continue
            src, dst, directed = edge.oriented()
            sources = set().union(*(self.ends[t][0] for t in types))
            targets = set().union(*(self.ends[t][1] for t in types))
            sides = (
                [(src, sources), (dst, targets)] if directed else [(src, sources | targets), (dst, sources | targets)]
            )
            for key, labels in sides:
                current = candidates.get(key)
                candidates[key] = set(labels) if current is None else current & labels
        for key, labels in candidates.items():
            node = self.nodes[key]
            if node.label == _ANY and labels is not None and len(labels) == 1:
                node.label = next(iter(labels))

    # -- features -------------------------------------------------------------------------

    def pattern_features(self) -> list[PatternFeature]:
        out = []
        for edge in self.edges:
            src, dst, directed = edge.oriented()
            s, d = self.nodes[src].label, self.nodes[dst].label
            if not directed and d < s:
                s, d = d, s
            low, high = _hops(edge.rel)
            out.append(PatternFeature(s, _rel_type(edge.rel), d, low, high, directed))
        return out

    def _single_var_constraints(self) -> dict[str, list[a.AstNode | tuple[str, a.AstNode]]]:
        """Per variable (node or relationship): its own constraints."""
        own: dict[str, list[Any]] = {}
        for key, node in self.nodes.items():
            for prop, value in node.inline:
                if not _identifiers(value):
                    own.setdefault(key, []).append((prop, value))
        for edge in self.edges:
            if edge.var is not None and isinstance(edge.rel.properties, a.Map):
                for prop, value in edge.rel.properties.entries:
                    if not _identifiers(value):
                        own.setdefault(edge.var, []).append((str(prop), value))
        for conj in self.where:
            if id(conj) in self.label_conjuncts:
                continue
            names = _identifiers(conj) - self.local_names
            if len(names) == 1:
                own.setdefault(next(iter(names)), []).append(conj)
        return own

    def constrained_props(self) -> dict[str, set[str]]:
        props: dict[str, set[str]] = {}
        for key, node in self.nodes.items():
            for prop, _v in node.inline:
                props.setdefault(key, set()).add(prop)
        for conj in self.where:
            if not isinstance(conj, a.EQ):
                continue
            for side in (conj.this, conj.expression):
                if isinstance(side, a.Property) and isinstance(side.this, a.Identifier):
                    var = str(side.this.this)
                    if var in self.nodes:
                        props.setdefault(var, set()).add(str(side.name))
        return props

    # -- canonical names ------------------------------------------------------------------

    def _blind(self, expr: a.AstNode, var: str) -> str:
        env = {var: _Sym("_", "", frozenset())}
        env.update({n: sym for n, sym in self.local_env().items() if n != var})
        return _CanonRenderer(env).text(expr)

    def name_variables(self) -> None:
        own = self._single_var_constraints()
        self.own = own
        sig: dict[str, tuple[str, ...]] = {}
        for var, items in own.items():
            texts = []
            for item in items:
                if isinstance(item, tuple):
                    texts.append(f"_.{item[0]} = {self._blind(item[1], var)}")
                else:
                    texts.append(self._blind(item, var))
            sig[var] = tuple(sorted(texts))
        self.sig = sig
        colors = self._refine(extra={})
        tied = self._ties(colors)
        if tied:
            usage = self._usage(tied)
            colors = self._refine(extra=usage)
        self.colors = colors
        # node names
        named = sorted(
            (n for n in self.nodes.values() if n.named),
            key=lambda n: (n.label, colors[n.key], n.order),
        )
        counts: dict[str, int] = {}
        for node in named:
            counts[node.label] = counts.get(node.label, 0) + 1
            node.name = f"{node.label}#{counts[node.label]}"
        # relationship names
        self.rel_names: dict[str, str] = {}
        rels = sorted(
            self.rel_vars.items(),
            key=lambda kv: (_rel_type(kv[1].rel), self._edge_color(kv[1], colors), kv[1].order),
        )
        counts = {}
        for var, edge in rels:
            t = _rel_type(edge.rel)
            counts[t] = counts.get(t, 0) + 1
            self.rel_names[var] = f"[{t}]#{counts[t]}"
        # path names
        self.path_names: dict[str, str] = {}
        paths = sorted(
            enumerate(self.paths),
            key=lambda ip: (ip[1][1], sorted(colors[k] for k in ip[1][2]), ip[0]),
        )
        for k, (_i, (var, _shortest, _keys)) in enumerate(paths, start=1):
            self.path_names.setdefault(var, f"path#{k}")

    def _edge_color(self, edge: _Edge, colors: Mapping[str, int]) -> tuple[Any, ...]:
        src, dst, directed = edge.oriented()
        ends = (colors[src], colors[dst]) if directed else tuple(sorted((colors[src], colors[dst])))
        return (self._rel_color0(edge), ends)

    def _rel_color0(self, edge: _Edge) -> tuple[Any, ...]:
        _src, _dst, directed = edge.oriented()
        return (_rel_type(edge.rel), _hops(edge.rel), directed, edge.ctx, self.sig.get(edge.var or "", ()))

    def _refine(self, extra: Mapping[str, tuple[Any, ...]]) -> dict[str, int]:
        keys = list(self.nodes)
        init = {
            k: (n.label, tuple(sorted(n.ctx)), self.sig.get(k, ()) if n.named else (), extra.get(k, ()))
            for k, n in self.nodes.items()
        }
        colors = _rank(init)
        incident: dict[str, list[tuple[tuple[Any, ...], str, str]]] = {k: [] for k in keys}
        for edge in self.edges:
            src, dst, directed = edge.oriented()
            c0 = self._rel_color0(edge)
            incident[src].append((c0, "out" if directed else "any", dst))
            incident[dst].append((c0, "in" if directed else "any", src))
        for _ in range(len(keys)):
            sigs = {k: (colors[k], tuple(sorted((c0, d, colors[o]) for c0, d, o in incident[k]))) for k in keys}
            new = _rank(sigs)
            if len(set(new.values())) == len(set(colors.values())):
                break
            colors = new
        return colors

    def _ties(self, colors: Mapping[str, int]) -> list[str]:
        groups: dict[int, list[str]] = {}
        for k, n in self.nodes.items():
            if n.named:
                groups.setdefault(colors[k], []).append(k)
        return [k for ks in groups.values() if len(ks) > 1 for k in ks]

    def _usage(self, tied: Iterable[str]) -> dict[str, tuple[Any, ...]]:
        """Where each tied variable appears in the final columns and ORDER BY (others blind)."""
        usage = {}
        for var in tied:
            base = self.local_env()
            base.update({k: _Sym("?", "node", frozenset({k})) for k in self.nodes if self.nodes[k].named})
            base.update({k: _Sym("?", "relationship", frozenset({k})) for k in self.rel_vars})
            base.update({p[0]: _Sym("?", "path", frozenset({p[0]})) for p in self.paths})
            base[var] = _Sym("_", "node", frozenset({var}))
            proj = self.project(base)
            usage[var] = (tuple(t for t, _k, _r in proj.columns), proj.order)
        return usage

    # -- projection pipeline ----------------------------------------------------------------

    def base_env(self) -> dict[str, _Sym]:
        env = self.local_env()
        for node in self.nodes.values():
            if node.named:
                env[node.key] = _Sym(node.name, "node", frozenset({node.name}))
        for var, name in self.rel_names.items():
            env[var] = _Sym(name, "relationship", frozenset({name}))
        for var, name in self.path_names.items():
            env[var] = _Sym(name, "path", frozenset({name}))
        return env

    def project(self, base: dict[str, _Sym]) -> _Projection:
        state = {
            "order": (),
            "limit": None,
            "skip": None,
            "ordered": False,
            "ordered_then_limited": False,
            "unwind": 0,
            "projected": False,
        }
        comparisons: list[tuple[frozenset[str], frozenset[str]]] = []
        env = dict(base)
        state["base"] = base
        columns = self._clauses(self.query.clauses, env, state, comparisons, final=True)
        ret = self.query.clauses[-1]
        return _Projection(
            columns=columns,
            order=state["order"],
            limit=state["limit"],
            skip=state["skip"],
            ordered_then_limited=state["ordered_then_limited"],
            return_distinct=bool(ret.distinct),
            comparisons=comparisons,
        )

    def _clauses(
        self, clauses: list[a.AstNode], env: dict[str, _Sym], state: dict[str, Any], comparisons: list[Any], final: bool
    ) -> list[tuple[str, str, frozenset[str]]]:
        columns: list[tuple[str, str, frozenset[str]]] = []
        for i, clause in enumerate(clauses):
            if isinstance(clause, a.Match):
                # variables (re)bound by this MATCH are visible again after a WITH
                for n in iter_nodes(clause.pattern) if state["projected"] else ():
                    if isinstance(n, a.Identifier) and str(n.this) in state["base"]:
                        env.setdefault(str(n.this), state["base"][str(n.this)])
                self._comparisons(clause.where, {**state["base"], **env}, comparisons, projection=False)
            elif isinstance(clause, a.Unwind):
                state["unwind"] += 1
                roots = _roots(clause.expression, {**state["base"], **env})
                env[str(clause.alias.this)] = _Sym(f"unwind#{state['unwind']}", "expression", roots)
            elif isinstance(clause, a.CallSubquery):
                inner = clause.query
                if not isinstance(inner, a.Query):
                    raise _Unsupported("UNION inside CALL { }")
                self._clauses(inner.clauses, env, state, comparisons, final=False)
            elif isinstance(clause, (a.With, a.Return)):
                is_final = final and i == len(clauses) - 1
                columns = self._projection(clause, env, state, comparisons, is_final)
        return columns

    def _projection(
        self,
        clause: a.With | a.Return,
        env: dict[str, _Sym],
        state: dict[str, Any],
        comparisons: list[Any],
        final: bool,
    ) -> list[tuple[str, str, frozenset[str]]]:
        # names out of scope (pattern variables of sub-queries after a WITH) fall back to base
        full = {**state["base"], **env}
        renderer = _CanonRenderer(full)
        columns: list[tuple[str, str, frozenset[str]]] = []
        new: dict[str, _Sym] = {}
        star = False
        for item in clause.expressions or []:
            if isinstance(item, a.Star):
                star = True
                continue
            expr = item.this if isinstance(item, a.Alias) else item
            self._comparisons(expr, full, comparisons, projection=True)
            text = renderer.text(expr)
            kind = _kind(expr, full)
            roots = _roots(expr, full)
            columns.append((text, kind, roots))
            name = (
                str(item.alias.this)
                if isinstance(item, a.Alias)
                else str(expr.this)
                if isinstance(expr, a.Identifier)
                else None
            )
            if name is not None:
                if isinstance(expr, a.Identifier) and str(expr.this) in full:
                    new[name] = full[str(expr.this)]
                else:
                    new[name] = _Sym(text, kind, roots, isinstance(expr, _ATOMIC), _has_aggregate(expr, full))
        if star:
            visible = sorted(
                (sym for n, sym in env.items() if n not in self.local_names),
                key=lambda s: s.text,
            )
            columns = [(s.text, s.kind, s.roots) for s in visible] + columns
        order_env = {**full, **new}
        if clause.order is not None:
            order_renderer = _CanonRenderer(order_env)
            state["order"] = tuple(
                OrderKey(order_renderer.text(o.this), "DESC" if o.desc else "ASC") for o in clause.order.expressions
            )
            state["ordered"] = True
        if clause.limit is not None:
            state["limit"] = self._value(clause.limit.this, order_env)
            if state["ordered"]:
                state["ordered_then_limited"] = True
        if clause.skip is not None:
            state["skip"] = self._value(clause.skip.this, order_env)
        if isinstance(clause, a.With):
            state["projected"] = True
            if not star:
                kept = {n: s for n, s in env.items() if n in self.local_names}
                env.clear()
                env.update(kept)
            env.update(new)
            self._comparisons(clause.where, {**state["base"], **env}, comparisons, projection=False)
        elif not final:  # RETURN of a CALL { } subquery exports its columns
            env.update(new)
        return columns

    def _value(self, expr: a.AstNode, env: Mapping[str, _Sym]) -> Limit:
        if isinstance(expr, a.Integer) and isinstance(expr.this, int):
            return int(expr.this)
        if isinstance(expr, a.Parameter):
            return f"${expr.name}"
        return _CanonRenderer(env).text(expr)

    def _comparisons(
        self, expr: a.AstNode | None, env: Mapping[str, _Sym], out: list[Any], *, projection: bool
    ) -> None:
        if expr is None:
            return
        kinds: tuple[type[a.AstNode], ...] = (a.LT, a.LTE, a.GT, a.GTE)
        if projection:
            kinds += (a.EQ, a.NEQ)
        for node in iter_nodes(expr):
            if isinstance(node, kinds):
                left, right = _roots(node.this, env), _roots(node.expression, env)
                if left and right and left != right:
                    out.append((left, right))

    # -- families -------------------------------------------------------------------------

    def match_family(self, comparisons: list[Any]) -> str:
        if any(isinstance(n, a.ShortestPath) for n in self.all):
            return "shortest_path"
        if any(isinstance(c, a.Match) and c.optional for c in self.all):
            return "optional_match"
        edges = [e for e in self.edges if e.ctx != "sub"]
        keys = [k for k, n in self.nodes.items() if n.ctx - {"sub"}]
        anchors = {
            k
            for k in keys
            if k in self.own
            and self.nodes[k].named
            or (not self.nodes[k].named and any(not _identifiers(v) for _p, v in self.nodes[k].inline))
        }
        comps = _components(keys, edges)
        if comparisons:
            return "comparison"
        anchored = {comps[k] for k in anchors if k in comps}
        if len(anchored) >= 2:
            return "comparison"
        if anchors and self._intersection(keys, edges, anchors):
            return "intersection"
        sizes: dict[int, int] = {}
        for e in edges:
            sizes[comps[e.left]] = sizes.get(comps[e.left], 0) + 1
        if any(s >= 2 for s in sizes.values()) or any(_hops(e.rel) != (1, 1) for e in edges):
            return "multi_hop"
        return "one_hop"

    @staticmethod
    def _intersection(keys: list[str], edges: list[_Edge], anchors: set[str]) -> bool:
        for v in keys:
            incident = [e for e in edges if v in (e.left, e.right) and e.left != e.right]
            if len(incident) < 2:
                continue
            rest = [k for k in keys if k != v]
            comps = _components(rest, [e for e in edges if v not in (e.left, e.right)])
            branches = set()
            for e in incident:
                other = e.right if e.left == v else e.left
                comp = comps[other]
                if any(comps.get(k) == comp for k in anchors):
                    branches.add(comp)
            if len(branches) >= 2:
                return True
        return False

    # -- everything -----------------------------------------------------------------------

    def derive(self) -> _Part:
        self.collect()
        self.resolve_labels()
        self.name_variables()
        proj = self.project(self.base_env())
        props = self.constrained_props()
        nodes: list[NodeFeature] = []
        for key, node in self.nodes.items():
            nodes.append(NodeFeature(node.label, ""))
            nodes.extend(NodeFeature(node.label, p) for p in sorted(props.get(key, ())))
        kinds = [k for _t, k, _r in proj.columns]
        if kinds and all(k == "boolean" for k in kinds):
            rfam = "boolean"
        elif proj.ordered_then_limited:
            rfam = "ranking"
        elif "aggregate" in kinds:
            rfam = "aggregation"
        elif proj.return_distinct:
            rfam = "distinct_set"
        else:
            rfam = "property"
        return _Part(
            patterns=self.pattern_features(),
            nodes=nodes,
            returns=[t for t, _k, _r in proj.columns],
            shape=kinds,
            properties=self.properties_used(),
            distinct="distinct" in self.ops,
            order=proj.order,
            limit=proj.limit,
            skip=proj.skip,
            ops=list(self.ops),
            match_family=self.match_family(proj.comparisons),
            return_family=rfam,
        )

    def properties_used(self) -> set[PropertyFeature]:
        owner_of: dict[str, str] = {}
        for node in self.nodes.values():
            if node.named:
                owner_of[node.key] = node.label
        for var, edge in self.rel_vars.items():
            owner_of.setdefault(var, _rel_type(edge.rel))
        # WITH n AS m: m is n
        for n in self.all:
            if isinstance(n, a.Alias) and isinstance(n.this, a.Identifier):
                src = str(n.this.this)
                if src in owner_of:
                    owner_of.setdefault(str(n.alias.this), owner_of[src])
        out: set[PropertyFeature] = set()
        for node in self.nodes.values():
            out.update(PropertyFeature(node.label, p) for p, _v in node.inline)
        for edge in self.edges:
            if isinstance(edge.rel.properties, a.Map):
                out.update(PropertyFeature(_rel_type(edge.rel), str(k)) for k, _v in edge.rel.properties.entries)
        for n in self.all:
            if isinstance(n, a.Property) and isinstance(n.this, a.Identifier):
                out.add(PropertyFeature(owner_of.get(str(n.this.this), _ANY), str(n.name)))
            elif isinstance(n, a.MapProjection) and isinstance(n.this, a.Identifier):
                owner = owner_of.get(str(n.this.this), _ANY)
                for entry in n.entries or []:
                    if isinstance(entry, a.PropertySelector):
                        out.add(PropertyFeature(owner, str(entry.name)))
        return out


def _rank(signatures: Mapping[str, Any]) -> dict[str, int]:
    order = {sig: i for i, sig in enumerate(sorted(set(signatures.values()), key=repr))}
    return {k: order[s] for k, s in signatures.items()}


def _components(keys: Iterable[str], edges: Iterable[_Edge]) -> dict[str, int]:
    parent = {k: k for k in keys}

    def find(k: str) -> str:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for e in edges:
        if e.left in parent and e.right in parent:
            parent[find(e.left)] = find(e.right)
    roots = sorted({find(k) for k in parent})
    index = {r: i for i, r in enumerate(roots)}
    return {k: index[find(k)] for k in parent}


# --------------------------------------------------------------------------------------------
# UNION branches and the public API
# --------------------------------------------------------------------------------------------

_MATCH_PRIORITY = ("shortest_path", "optional_match", "comparison", "intersection", "multi_hop", "one_hop")
_RETURN_PRIORITY = ("boolean", "ranking", "aggregation", "distinct_set", "property")


def _branches(node: a.AstNode, ops: list[str]) -> Iterator[a.Query]:
    if isinstance(node, a.Cypher):
        yield from _branches(node.this, ops)
    elif isinstance(node, a.Union):
        ops.append("union")
        if node.distinct or node.distinct is None:
            ops.append("distinct")
        yield from _branches(node.this, ops)
        yield from _branches(node.expression, ops)
    elif isinstance(node, a.Query):
        yield node
    else:
        raise _Unsupported(f"{type(node).__name__} statement")


def _merge(parts: list[_Part], extra_ops: list[str]) -> Derivation:
    first = parts[0]
    if len(parts) == 1:
        returns, shape = first.returns, first.shape
    else:
        width = {len(p.returns) for p in parts}
        if len(width) != 1:
            raise _Unsupported("UNION branches return different numbers of columns")
        returns = [" | ".join(sorted({p.returns[i] for p in parts})) for i in range(len(first.returns))]
        shape = [
            first.shape[i] if len({p.shape[i] for p in parts}) == 1 else "expression" for i in range(len(first.shape))
        ]
    last = parts[-1]
    return Derivation(
        patterns=tuple(sorted(f for p in parts for f in p.patterns)),
        nodes=tuple(sorted(f for p in parts for f in p.nodes)),
        returns=tuple(returns),
        shape=tuple(shape),
        properties=tuple(sorted(set().union(*(p.properties for p in parts)))),
        distinct=any(p.distinct for p in parts) or "distinct" in extra_ops,
        order=last.order,
        limit=last.limit,
        skip=last.skip,
        ops=tuple(sorted([op for p in parts for op in p.ops] + extra_ops)),
        match_family=min((p.match_family for p in parts), key=_MATCH_PRIORITY.index),
        return_family=min((p.return_family for p in parts), key=_RETURN_PRIORITY.index),
    )


@lru_cache(maxsize=8192)
def _derive(query: str, ends: _Ends) -> Derivation | DerivationError:
    if not query.strip():
        return DerivationError("empty_query", "empty query: nothing to derive")
    try:
        parsed = parse_query(query)
    except GraphError as err:
        code = "empty_query" if err.message.startswith("empty query") else err.code
        return DerivationError(code, err.message)
    try:
        extra: list[str] = []
        branches = list(_branches(parsed.tree, extra))
        parts = [_Branch(b, ends).derive() for b in branches]
        return _merge(parts, extra)
    except _Unsupported as err:
        return DerivationError("unsupported", str(err))
    except Exception as err:  # noqa: BLE001 - a bug here must not look like a success
        return DerivationError("internal_error", f"{type(err).__name__}: {err}")


def derive(query: str, schema: GraphSchema | None = None) -> Derivation | DerivationError:
    """Derive the structural features of one read query (see the module docstring).

    >>> d = derive("MATCH (p:Paper)<-[:WROTE]-(a:Author {name: 'Ada'}) RETURN p.title AS t")
    >>> d.patterns
    (PatternFeature(source='Author', type='WROTE', target='Paper', min_hops=1, max_hops=1, directed=True),)
    >>> d.returns, d.match_family, d.return_family
    (('Paper#1.title',), 'one_hop', 'property')
    >>> derive("MATCH (n RETURN n").code
    'syntax_error'
    """
    if not isinstance(query, str):
        return DerivationError("syntax_error", f"query must be a string, not {type(query).__name__}")
    return _derive(query, _schema_ends(schema))


def features_json(query: str, schema: GraphSchema | None = None) -> dict[str, Any]:
    """:func:`derive` as a JSON-ready dict (``ok`` tells success from failure)."""
    return derive(query, schema).to_json()
