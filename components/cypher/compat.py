"""Neo4j-dialect Cypher → Ladybug (Kùzu dialect), by AST rewriting — never regex on text.

Users and models write Neo4j Cypher. :func:`to_ladybug` turns a parsed (and safety-checked)
query into text Ladybug 0.22 answers *the way Neo4j would*, or refuses it with a
:class:`~components.graph.errors.DialectError` naming the construct. The rule is: a difference
may be loud (an engine error) but never silent (a different answer). Every rewrite and refusal
is listed in ``docs/cypher-dialect.md`` with what was verified on a real Ladybug database.

In short:

* **Patterns** — ``shortestPath``/``allShortestPaths`` become ``* SHORTEST``/``* ALL SHORTEST``;
  variable-length relationships get ``* TRAIL`` (Neo4j never repeats a relationship inside a
  path; Ladybug walks by default, and its ``recursive_pattern_semantic`` setting has no effect in
  0.22, so the semantic is written inline); unbounded ones are refused (Ladybug silently caps
  them at 30 hops). Relationship uniqueness across a whole MATCH is enforced with generated
  variables and ``id(r1) <> id(r2)`` / ``list_contains(properties(rels(e), '_ID'), …)``
  predicates. ``(n:A|B)`` becomes Ladybug's ``(n:A:B)`` (OR); Neo4j's ``(n:A:B)`` (AND) is
  refused. Inline ``WHERE`` moves to the clause's ``WHERE``.
* **Expressions** — a registry of function rewrites (``type``→``label``, ``toInteger``,
  ``toString``, ``toBoolean`` with Neo4j semantics, ``substring`` and list indexes/slices
  shifted to 1-based, ``log``→``ln``, ``round``, ``id``, ``labels`` …), pattern predicates and
  ``COUNT { }`` given an explicit ``MATCH``, list comprehensions to ``list_transform`` /
  ``list_filter`` (over positions for lists of nodes/relationships, where Ladybug's lambdas are
  wrong), map projections to struct literals, ``n:Label`` to ``label(n) = 'Label'``,
  ``sum`` of nothing to 0.
* **Clauses** — an ordered ``WITH`` gets a one-row ``UNWIND`` barrier (Ladybug drops the
  ORDER BY before an aggregation) and ``SKIP 0`` when it has neither SKIP nor LIMIT.
* **Columns** — every un-aliased RETURN item is aliased with its rendered Neo4j text
  (:func:`alias_return_columns`, applied for both engines) and ``RETURN *`` is expanded in
  Neo4j's alphabetical order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Final

from cypherast import ast as a

from components.cypher.parse import (
    CypherRenderer,
    ParsedQuery,
    iter_nodes,
    render,
)
from components.graph.errors import DialectError, GraphError

__all__ = [
    "GENERATED_PREFIX",
    "LADYBUG_MAX_HOPS",
    "SUPPORTED_FUNCTIONS",
    "LadybugLambda",
    "LadybugRenderer",
    "alias_return_columns",
    "to_ladybug",
    "to_neo4j",
]

#: Ladybug's default ``var_length_extend_max_depth``: the largest upper bound it accepts.
LADYBUG_MAX_HOPS: Final = 30

#: Prefix of the variables the rewrite invents (never user-visible, excluded from RETURN *).
GENERATED_PREFIX: Final = "_gd_"

_ID_TABLE_SHIFT: Final = 1 << 40  # id(n) = table * 2^40 + offset


# --------------------------------------------------------------------------------------------
# AST helpers
# --------------------------------------------------------------------------------------------


class LadybugLambda(a.AstNode):
    """Ladybug's ``x -> body`` list lambda (``list_transform``, ``list_filter``)."""

    arg_types = {"variable": True, "body": True}


def _call(name: str, *args: a.AstNode) -> a.FunctionCall:
    return a.FunctionCall(name=name, expressions=list(args))


def _ident(name: str) -> a.Identifier:
    return a.Identifier(this=name)


def _str(value: str) -> a.String:
    return a.String(this=value)


def _int(value: int) -> a.Integer:
    return a.Integer(this=value)


def _int_literal(node: a.AstNode | None) -> int | None:
    """The value of an integer literal (``3`` or ``-3``), else None."""
    if isinstance(node, a.Integer) and isinstance(node.this, int):
        return node.this
    if isinstance(node, a.Neg) and isinstance(node.this, a.Integer):
        return -node.this.this
    return None


def _and(*parts: a.AstNode | None) -> a.AstNode | None:
    result: a.AstNode | None = None
    for part in parts:
        if part is None:
            continue
        result = part if result is None else a.And(this=result, expression=part)
    return result


def _case(
    subject: a.AstNode | None, ifs: list[tuple[a.AstNode, a.AstNode]], default: a.AstNode | None = None
) -> a.Case:
    return a.Case(this=subject, ifs=ifs, default=default)


def _null_safe(subject: a.AstNode, value: a.AstNode) -> a.Case:
    """``CASE WHEN subject IS NULL THEN NULL ELSE value END``."""
    return _case(None, [(a.IsNull(this=subject.copy()), a.Null())], value)


def _rel_ids(var: str) -> a.FunctionCall:
    """The ids of a variable-length relationship's relationships.

    ``properties(rels(e), '_ID')`` — not ``[x IN rels(e) | id(x)]``: Ladybug 0.22 evaluates
    lambdas over recursive relationships wrongly when the pattern has other parts.
    """
    return _call("properties", _call("rels", _ident(var)), _str("_ID"))


_INTEGER_TYPES: Final = (
    "INT64",
    "INT32",
    "INT16",
    "INT8",
    "UINT64",
    "UINT32",
    "UINT16",
    "UINT8",
    "INT128",
    "SERIAL",
)
_FLOAT_TYPES: Final = ("DOUBLE", "FLOAT")


def _type_guard(value: a.AstNode, allowed: Iterable[str], message: str, then: a.AstNode) -> a.AstNode:
    """``then``, but a runtime error when ``typeOf(value)`` is not one of ``allowed``.

    Ladybug evaluates every CASE branch eagerly, so an error cannot sit in a branch; instead a
    *string* is chosen by type and cast to INT64: ``'0'`` casts, the message does not (and the
    engine's error quotes it). Used where a type would otherwise give a silently different value.
    """
    types = a.List(expressions=[_str(t) for t in (*allowed, "ANY")])
    check = _case(
        None,
        [(a.In(this=_call("typeOf", value.copy()), expression=types), _str("0"))],
        _str(message),
    )
    return _case(_call("to_int64", check), [(_int(0), then)])


# --------------------------------------------------------------------------------------------
# Function rewrites (Neo4j name, lower case → rewrite of the call with rewritten arguments)
# --------------------------------------------------------------------------------------------

FunctionRewrite = Callable[[a.FunctionCall], a.AstNode]


def _renamed(name: str) -> FunctionRewrite:
    def rewrite(call: a.FunctionCall) -> a.AstNode:
        return a.FunctionCall(name=name, expressions=call.expressions, distinct=call.distinct)

    return rewrite


def _arity(call: a.FunctionCall, *allowed: int) -> list[a.AstNode]:
    args = list(call.expressions)
    if len(args) not in allowed:
        want = " or ".join(str(n) for n in allowed)
        raise DialectError(f"{call.name}() takes {want} argument(s), got {len(args)}")
    return args


def _to_integer(call: a.FunctionCall) -> a.AstNode:
    """Neo4j truncates toward zero and parses decimal strings; Ladybug's ``to_int64`` rounds
    doubles (1.7 → 2) and rejects ``'1.7'``. Doubles: ``sign(x) * floor(abs(x))``; everything
    else: the integer part of ``to_string(x)`` (exact for integers of any size)."""
    (x,) = _arity(call, 1)
    if isinstance(x, a.Null):
        return x
    literal = _static_to_integer(x)
    if literal is not None:
        return literal
    as_double = _call("to_double", x.copy())
    magnitude = _call("floor", _call("abs", as_double.copy()))
    truncated = _call("to_int64", a.Mul(this=_call("sign", as_double), expression=magnitude))
    text = _call("to_string", x.copy())
    integer_part = _call("to_int64", _call("split_part", text, _str("."), _int(1)))
    return _case(
        _call("typeOf", x.copy()),
        [(_str(t), truncated.copy()) for t in _FLOAT_TYPES],
        integer_part,
    )


_INT_TEXT = re.compile(r"\s*[+-]?\d+\s*")


def _static_to_integer(x: a.AstNode) -> a.AstNode | None:
    value = _int_literal(x)
    if value is not None:
        return _int(value)
    if isinstance(x, a.Boolean):
        return _int(1 if x.this else 0)
    if isinstance(x, a.Float) and math.isfinite(x.this):
        return _int(int(x.this))
    if isinstance(x, a.Neg) and isinstance(x.this, a.Float) and math.isfinite(x.this.this):
        return _int(-int(x.this.this))
    if isinstance(x, a.String):
        if _INT_TEXT.fullmatch(x.this):
            return _int(int(x.this))
        try:
            number = float(x.this)
        except ValueError:
            return a.Null()
        return _int(int(number)) if math.isfinite(number) else a.Null()
    return None


_TO_STRING_TYPES: Final = (*_INTEGER_TYPES, "STRING", "DATE", "BOOL")


def _to_string(call: a.FunctionCall) -> a.AstNode:
    """``to_string`` renders doubles as ``%f`` (1.5 → '1.500000'), booleans as 'True', and
    timestamps differently from Neo4j: booleans are lower-cased, those other types raise."""
    (x,) = _arity(call, 1)
    if isinstance(x, a.String | a.Null):
        return x
    value = _int_literal(x)
    if value is not None:
        return _str(str(value))
    if isinstance(x, a.Boolean):
        return _str("true" if x.this else "false")
    text = _case(
        _call("typeOf", x.copy()),
        [(_str("BOOL"), _call("lower", _call("to_string", x.copy())))],
        _call("to_string", x.copy()),
    )
    return _type_guard(
        x,
        _TO_STRING_TYPES,
        "toString() of this type (FLOAT, TIMESTAMP, LIST, NODE …) is formatted differently by "
        "Ladybug; format the value explicitly",
        text,
    )


def _to_boolean(*, strict: bool) -> FunctionRewrite:
    """Neo4j: booleans as is, 'true'/'false' in any case, integers as ``<> 0``, other strings
    null. Ladybug's ``to_bool`` also accepts 't', '1' … so the rule is spelled out."""

    def rewrite(call: a.FunctionCall) -> a.AstNode:
        (x,) = _arity(call, 1)
        if isinstance(x, a.Boolean | a.Null):
            return x
        text = _call("lower", _call("to_string", x.copy()))
        from_text = _case(
            text, [(_str("true"), a.Boolean(this=True)), (_str("false"), a.Boolean(this=False))], a.Null()
        )
        integer = a.NEQ(this=_call("to_string", x.copy()), expression=_str("0"))
        value = _case(
            None,
            [
                (
                    a.In(
                        this=_call("typeOf", x.copy()), expression=a.List(expressions=[_str(t) for t in _INTEGER_TYPES])
                    ),
                    integer,
                )
            ],
            from_text,
        )
        if not strict:
            return value
        return _type_guard(
            x, (*_INTEGER_TYPES, "STRING", "BOOL"), "toBoolean() accepts BOOLEAN, STRING or INTEGER only", value
        )

    return rewrite


def _substring(call: a.FunctionCall) -> a.AstNode:
    """0-based start → 1-based; Neo4j's optional length is required by Ladybug; a negative
    length is refused (Neo4j raises; Ladybug 0.22 *crashes the process*)."""
    args = _arity(call, 2, 3)
    text, start = args[0], args[1]
    start_value = _int_literal(start)
    if start_value is not None and start_value < 0:
        raise DialectError("substring() with a negative start is an error in Neo4j")
    new_start: a.AstNode = _int(start_value + 1) if start_value is not None else a.Add(this=start, expression=_int(1))
    if len(args) == 2:
        length: a.AstNode = _call("size", text.copy())
    else:
        length = args[2]
        length_value = _int_literal(length)
        if length_value is not None and length_value < 0:
            raise DialectError("substring() with a negative length is an error in Neo4j")
        if length_value is None and not isinstance(length, a.Null):
            # never let a negative length reach Ladybug: it crashes the process
            length = _case(None, [(a.LT(this=length.copy(), expression=_int(0)), a.Null())], length)
    return _call("substring", text, new_start, length)


def _round(call: a.FunctionCall) -> a.AstNode:
    """Neo4j rounds ties toward +infinity (round(-2.5) = -2.0) and returns a float; Ladybug
    has no 1-argument round. ``round(x)`` and ``round(x, 0)`` → ``floor(x + 0.5)``."""
    args = _arity(call, 1, 2, 3)
    if len(args) == 3:
        raise DialectError("round() with a rounding mode is not supported by Ladybug")
    if len(args) == 1 or _int_literal(args[1]) == 0:
        return _call("to_double", _call("floor", a.Add(this=args[0], expression=a.Float(this=0.5))))
    return _call("round", *args)


def _as_float(name: str) -> FunctionRewrite:
    """Neo4j's ``ceil``/``floor`` always return a float; Ladybug keeps integers integral."""

    def rewrite(call: a.FunctionCall) -> a.AstNode:
        (x,) = _arity(call, 1)
        return _call("to_double", _call(name, x))

    return rewrite


def _labels(call: a.FunctionCall) -> a.AstNode:
    """Ladybug's ``label(n)`` is one string; Neo4j's ``labels(n)`` a list (null for null)."""
    (x,) = _arity(call, 1)
    return _null_safe(x, a.List(expressions=[_call("label", x)]))


def _node_id(call: a.FunctionCall) -> a.AstNode:
    """Ladybug ids are (table, offset) pairs; ``id(x)`` becomes ``table * 2^40 + offset``:
    deterministic for a given database file, unique across tables — never equal to Neo4j's."""
    (x,) = _arity(call, 1)
    table = _call("to_int64", _call("split_part", _call("to_string", _call("id", x.copy())), _str(":"), _int(1)))
    return a.Add(this=a.Mul(this=table, expression=_int(_ID_TABLE_SHIFT)), expression=_call("offset", _call("id", x)))


def _element_id(call: a.FunctionCall) -> a.AstNode:
    """``elementId(x)`` → ``to_string(id(x))`` ('table:offset'), deterministic per file."""
    (x,) = _arity(call, 1)
    return _call("to_string", _call("id", x))


def _exists(call: a.FunctionCall) -> a.AstNode:
    """Neo4j 4's ``exists(n.prop)`` → ``n.prop IS NOT NULL``."""
    (x,) = _arity(call, 1)
    return a.IsNull(this=x, not_=True)


def _is_empty(call: a.FunctionCall) -> a.AstNode:
    (x,) = _arity(call, 1)
    return a.EQ(this=_call("size", x), expression=_int(0))


_LIST_FUNCTIONS: Final = frozenset(
    {
        "collect",
        "keys",
        "labels",
        "nodes",
        "relationships",
        "rels",
        "range",
        "split",
        "string_split",
        "tail",
        "reverse",
        "list_reverse",
        "list_slice",
        "list_transform",
        "list_filter",
    }
)
_STRING_FUNCTIONS: Final = frozenset(
    {
        "tostring",
        "to_string",
        "substring",
        "toupper",
        "tolower",
        "trim",
        "ltrim",
        "rtrim",
        "replace",
        "left",
        "right",
        "upper",
        "lower",
        "label",
        "type",
    }
)


def _reverse(call: a.FunctionCall) -> a.AstNode:
    """Ladybug's ``reverse`` casts a list to a string ('[1,2]' → ']2,1['): lists known as such
    use ``list_reverse``; values of unknown type raise at run time when they are lists."""
    (x,) = _arity(call, 1)
    if isinstance(x, a.List | a.ListComprehension | a.ListSlice) or (
        isinstance(x, a.FunctionCall) and str(x.name).lower() in _LIST_FUNCTIONS
    ):
        return _call("list_reverse", x)
    if isinstance(x, a.String) or (isinstance(x, a.FunctionCall) and str(x.name).lower() in _STRING_FUNCTIONS):
        return _call("reverse", x)
    return _type_guard(
        x, ("STRING",), "reverse() of a LIST: use a list expression Ladybug can see is a list", _call("reverse", x)
    )


def _head(call: a.FunctionCall) -> a.AstNode:
    (x,) = _arity(call, 1)
    return _call("list_extract", x, _int(1))


def _last(call: a.FunctionCall) -> a.AstNode:
    (x,) = _arity(call, 1)
    return _call("list_extract", x, _int(-1))


def _tail(call: a.FunctionCall) -> a.AstNode:
    (x,) = _arity(call, 1)
    return _call("list_slice", x, _int(2), _int(-1))


def _sum(call: a.FunctionCall) -> a.AstNode:
    """Neo4j's ``sum`` of no rows (or only nulls) is 0; Ladybug's is null."""
    return a.Coalesce(expressions=[call, _int(0)])


def _refuse(reason: str) -> FunctionRewrite:
    def rewrite(call: a.FunctionCall) -> a.AstNode:
        raise DialectError(f"{call.name}() is not supported: {reason}")

    return rewrite


def _shortest_expression(call: a.FunctionCall) -> a.AstNode:
    raise DialectError(f"{call.name}() as an expression is not supported: write MATCH p = {call.name}((a)-[*..n]-(b))")


_SAME: Final[tuple[str, ...]] = (
    # aggregates
    "count",
    "avg",
    "min",
    "max",
    "collect",
    # scalar, verified identical in name and meaning
    "size",
    "length",
    "nodes",
    "range",
    "toupper",
    "tolower",
    "trim",
    "ltrim",
    "rtrim",
    "replace",
    "left",
    "right",
    "abs",
    "sign",
    "sqrt",
    "log10",
    "pi",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "degrees",
    "radians",
    "date",
    "coalesce",
    "nullif",
)

#: Every Neo4j function the Ladybug path accepts, with its rewrite (identity for ``_SAME``).
_FUNCTION_REWRITES: Final[dict[str, FunctionRewrite]] = {
    **{name: (lambda call: call) for name in _SAME},
    "sum": _sum,
    "type": _renamed("label"),
    "labels": _labels,
    "id": _node_id,
    "elementid": _element_id,
    "startnode": _renamed("start_node"),
    "endnode": _renamed("end_node"),
    "relationships": _renamed("rels"),
    "tointeger": _to_integer,
    "tointegerornull": _to_integer,
    "tofloat": _renamed("to_double"),
    "tofloatornull": _renamed("to_double"),
    "tostring": _to_string,
    "tostringornull": _to_string,
    "toboolean": _to_boolean(strict=True),
    "tobooleanornull": _to_boolean(strict=False),
    "substring": _substring,
    "split": _renamed("string_split"),
    "rand": _refuse(
        "rand() is nondeterministic: re-executing the query could never reproduce its result, so it cannot be evidence"
    ),
    "log": _renamed("ln"),
    "round": _round,
    "ceil": _as_float("ceil"),
    "floor": _as_float("floor"),
    "reverse": _reverse,
    "head": _head,
    "last": _last,
    "tail": _tail,
    "exists": _exists,
    "isempty": _is_empty,
    "char_length": _renamed("size"),
    "character_length": _renamed("size"),
    "keys": _refuse(
        "Ladybug lists every column of the table, including null-valued ones; return the properties you need explicitly"
    ),
    "properties": _refuse("Ladybug includes null-valued properties; return the properties you need explicitly"),
    "shortestpath": _shortest_expression,
    "allshortestpaths": _shortest_expression,
}

#: Neo4j functions accepted on the Ladybug path (anything else is refused by name).
SUPPORTED_FUNCTIONS: Final[frozenset[str]] = frozenset(
    name
    for name, fn in _FUNCTION_REWRITES.items()
    if name not in {"keys", "properties", "shortestpath", "allshortestpaths"}
)


# --------------------------------------------------------------------------------------------
# Column names
# --------------------------------------------------------------------------------------------


def alias_return_columns(tree: a.AstNode) -> a.AstNode:
    """Alias every un-aliased RETURN item with its rendered Neo4j-dialect text, in place (pass a
    copy). Both engines then name columns identically: ``RETURN n.name`` → column ``n.name``."""
    for node in list(iter_nodes(tree)):
        if isinstance(node, a.Return):
            node.set(
                "expressions",
                [
                    item if isinstance(item, a.Alias | a.Star) else a.Alias(this=item, alias=_ident(render(item)))
                    for item in node.expressions
                ],
            )
    return tree


# Rewrites are pure functions of the query text (a ParsedQuery is itself cached per text), so
# the certifier's static check and the query path share one rewrite per text and dialect.
_REWRITES: dict[tuple[str, str, int], str] = {}
_REWRITES_MAX: Final = 8192


def _memo(kind: str, parsed: ParsedQuery, hops: int, make: Callable[[], str]) -> str:
    key = (kind, parsed.source, hops)
    text = _REWRITES.get(key)
    if text is None:
        text = make()  # refusals raise and are not cached
        if len(_REWRITES) >= _REWRITES_MAX:
            _REWRITES.pop(next(iter(_REWRITES)))
        _REWRITES[key] = text
    return text


def to_neo4j(parsed: ParsedQuery) -> str:
    """The query for a Neo4j backend: the same text, with RETURN columns aliased."""
    return _memo("neo4j", parsed, 0, lambda: render(alias_return_columns(parsed.tree.copy())))


# --------------------------------------------------------------------------------------------
# The Ladybug rewrite
# --------------------------------------------------------------------------------------------

NODE, REL, VARREL, PATH, ENTITIES, VALUE = "node", "rel", "varrel", "path", "entities", "value"
Scope = dict[str, str]  # variable name → kind

_ENTITY_LIST_FUNCTIONS: Final = frozenset({"nodes", "relationships", "rels"})


def _entity_list(expr: a.AstNode | None, scope: Scope) -> bool:
    """Whether ``expr`` (original or rewritten) is a list of nodes or relationships: ``nodes(p)``,
    ``relationships(p)``, a variable-length relationship, ``collect(n)``, ``[a, b]`` …"""
    if isinstance(expr, a.Identifier):
        return scope.get(str(expr.this)) in (VARREL, ENTITIES)
    if isinstance(expr, a.FunctionCall):
        name = str(expr.name).lower()
        if name in _ENTITY_LIST_FUNCTIONS:
            return True
        if name == "collect" and expr.expressions:
            return _kind_of(expr.expressions[0], scope) in (NODE, REL)
        return False
    if isinstance(expr, a.List):
        return any(_kind_of(e, scope) in (NODE, REL) for e in expr.expressions)
    if isinstance(expr, a.ListSlice):
        return _entity_list(expr.this, scope)
    return False


def _kind_of(expr: a.AstNode, scope: Scope) -> str:
    if isinstance(expr, a.Identifier):
        kind = scope.get(str(expr.this), VALUE)
        return ENTITIES if kind == VARREL else kind
    if _entity_list(expr, scope):
        return ENTITIES
    return VALUE


class _ToLadybug:
    """One rewrite of one (copied) tree; see the module docstring for the rules."""

    def __init__(self, tree: a.AstNode, max_hops: int) -> None:
        self.max_hops = max_hops
        self.used = {str(n.this) for n in iter_nodes(tree) if isinstance(n, a.Identifier)}
        self.counter = 0

    def fresh(self, prefix: str = f"{GENERATED_PREFIX}r") -> str:
        while True:
            name = f"{prefix}{self.counter}"
            self.counter += 1
            if name not in self.used:
                self.used.add(name)
                return name

    # -- statements and clauses --------------------------------------------------------------

    def statement(self, node: a.AstNode, scope: Scope) -> None:
        if isinstance(node, a.Cypher):
            self.statement(node.this, scope)
        elif isinstance(node, a.Union):
            self.statement(node.this, dict(scope))
            self.statement(node.expression, dict(scope))
        elif isinstance(node, a.Query):
            self.query(node, scope)
        else:  # pragma: no cover - safety admits nothing else at the top
            raise DialectError(f"{type(node).__name__} is not supported")

    def query(self, query: a.Query, scope: Scope) -> Scope:
        clauses: list[a.AstNode] = []
        for clause in query.clauses:
            clauses.append(clause)
            if isinstance(clause, a.Match):
                self.match(clause, scope)
            elif isinstance(clause, a.Unwind):
                clause.set("expression", self.expr(clause.expression, scope))
                scope[str(clause.alias.this)] = VALUE
            elif isinstance(clause, a.With | a.Return):
                scope = self.projection(clause, scope)
                if isinstance(clause, a.With) and clause.order is not None:
                    clauses.append(self.keep_order(clause))
            else:  # pragma: no cover - safety admits nothing else
                raise DialectError(f"{type(clause).__name__} is not supported")
        query.set("clauses", clauses)
        return scope

    def keep_order(self, clause: a.With) -> a.Unwind:
        """``WITH … ORDER BY … [SKIP/LIMIT]`` followed by an aggregation: Ladybug 0.22 drops the
        ORDER BY (``WITH p ORDER BY p.age DESC LIMIT 2 RETURN avg(p.age)`` averages the first
        two rows in storage order) and refuses ORDER BY without SKIP/LIMIT. A one-row
        ``UNWIND [0]`` after the clause keeps the order (for LIMIT, SKIP and ``collect``);
        ``SKIP 0`` is added when neither is given."""
        if clause.skip is None and clause.limit is None:
            clause.set("skip", a.Skip(this=_int(0)))
        barrier = self.fresh(f"{GENERATED_PREFIX}b")
        return a.Unwind(expression=a.List(expressions=[_int(0)]), alias=_ident(barrier))

    def projection(self, clause: a.With | a.Return, scope: Scope) -> Scope:
        items = list(clause.expressions)
        new_scope: Scope = {}
        out: list[a.AstNode] = []
        if any(isinstance(i, a.Star) for i in items):
            if isinstance(clause, a.With):
                new_scope.update(scope)  # WITH * keeps everything, generated names included
                out.append(a.Star())
            else:  # Neo4j orders RETURN * columns by name; Ladybug by pattern position
                names = sorted(n for n in scope if not n.startswith(GENERATED_PREFIX))
                if not names:
                    raise DialectError("RETURN * with no variables in scope")
                items = [a.Alias(this=_ident(n), alias=_ident(n)) for n in names] + [
                    i for i in items if not isinstance(i, a.Star)
                ]
        for item in items:
            if isinstance(item, a.Star):
                continue
            if isinstance(item, a.Alias):
                name = str(item.alias.this)
                kind = _kind_of(item.this, scope)
                out.append(a.Alias(this=self.expr(item.this, scope), alias=item.alias))
                new_scope[name] = kind
            elif isinstance(item, a.Identifier) and scope.get(str(item.this)) == VARREL:
                # a variable-length relationship leaves as Neo4j's list of relationships
                out.append(a.Alias(this=self.expr(item, scope), alias=_ident(str(item.this))))
                new_scope[str(item.this)] = ENTITIES
            else:
                if isinstance(item, a.Identifier):
                    new_scope[str(item.this)] = scope.get(str(item.this), VALUE)
                out.append(self.expr(item, scope))
        clause.set("expressions", out)
        after = {**scope, **new_scope}
        if clause.order is not None:
            for ordered in clause.order.expressions:
                ordered.set("this", self.expr(ordered.this, after))
        for key in ("skip", "limit"):
            part = clause.args.get(key)
            if part is not None:
                part.set("this", self.expr(part.this, after))
        if isinstance(clause, a.With) and clause.where is not None:
            clause.where.set("this", self.expr(clause.where.this, new_scope))
        return new_scope

    # -- MATCH ---------------------------------------------------------------------------------

    def match(self, match: a.Match, scope: Scope) -> None:
        extra: list[a.AstNode] = []
        rels: list[tuple[a.RelationshipPattern, bool]] = []  # (pattern, is shortest)
        shortest_vars: set[str] = set()
        for path in match.pattern.paths:
            shortest = self.unwrap_shortest(path)
            if shortest is not None and path.variable is not None:
                shortest_vars.add(str(path.variable.this))
            for element in path.elements:
                if isinstance(element, a.NodePattern):
                    extra.extend(self.node_pattern(element, scope))
                elif isinstance(element, a.RelationshipPattern):
                    extra.extend(self.rel_pattern(element, scope, shortest))
                    rels.append((element, shortest is not None))
                    if shortest is not None and element.variable is not None:
                        shortest_vars.add(str(element.variable.this))
            if path.variable is not None:
                scope[str(path.variable.this)] = PATH
        if any(is_short for _, is_short in rels) and len(rels) > 1:
            raise DialectError(
                "shortestPath()/allShortestPaths() must be the only relationship pattern of its "
                "MATCH: put the other patterns in a separate MATCH"
            )
        where = self.expr(match.where.this, scope) if match.where is not None else None
        if (
            where is not None
            and shortest_vars
            and any(isinstance(n, a.Identifier) and str(n.this) in shortest_vars for n in iter_nodes(where))
        ):
            raise DialectError(
                "a WHERE on the path of shortestPath() is applied during the search by Neo4j but "
                "after it by Ladybug: filter the endpoints only, or use a bounded variable-length "
                "MATCH and ORDER BY length"
            )
        unique = self.uniqueness([r for r, _ in rels])
        combined = _and(where, *extra, *unique)
        match.set("where", None if combined is None else a.Where(this=combined))

    def unwrap_shortest(self, path: a.PathPattern) -> a.ShortestPath | None:
        if len(path.elements) != 1 or not isinstance(path.elements[0], a.ShortestPath):
            return None
        shortest = path.elements[0]
        inner = shortest.this
        rel_patterns = [e for e in inner.elements if isinstance(e, a.RelationshipPattern)]
        if len(rel_patterns) != 1:
            raise DialectError("shortestPath() needs a pattern with exactly one relationship")
        rel = rel_patterns[0]
        low = rel.min_hops if rel.variable_length else 1
        high = rel.max_hops if rel.variable_length else 1
        if low not in (None, 1):
            raise DialectError(
                f"shortestPath() with lower bound {low} is not supported: Ladybug's shortest paths start at 1 hop"
            )
        if high is None:
            high = self.max_hops  # Neo4j: unbounded; Ladybug: its maximum (documented)
        rel.set("variable_length", True)
        rel.set("min_hops", 1)
        rel.set("max_hops", high)
        rel.set("ladybug_mode", "ALL SHORTEST" if shortest.all_ else "SHORTEST")
        path.set("elements", list(inner.elements))
        return shortest

    def node_pattern(self, node: a.NodePattern, scope: Scope) -> list[a.AstNode]:
        extra: list[a.AstNode] = []
        labels = node.labels
        if labels is not None:
            if labels.expression is not None:
                names = str(labels.expression).split("|")
                if not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n) for n in names):
                    raise DialectError(
                        f"label expression :{labels.expression} is not supported: only "
                        "alternatives (:A|B) can be expressed in Ladybug"
                    )
                node.set("labels", a.LabelExpression(labels=names))  # Ladybug's :A:B is OR
            elif len(labels.labels or []) > 1:
                raise DialectError(
                    f"multi-label pattern (:{':'.join(labels.labels)}) means AND in Neo4j but OR "
                    "in Ladybug (and nodes have one label here): use one label"
                )
        if node.properties is not None:
            node.set("properties", self.expr(node.properties, scope))
        if node.where is not None:
            scope_with = dict(scope)
            if node.variable is not None:
                scope_with[str(node.variable.this)] = NODE
            extra.append(self.expr(node.where.this, scope_with))
            node.set("where", None)
        if node.variable is not None:
            scope[str(node.variable.this)] = NODE
        return extra

    def rel_pattern(self, rel: a.RelationshipPattern, scope: Scope, shortest: a.ShortestPath | None) -> list[a.AstNode]:
        extra: list[a.AstNode] = []
        if rel.variable_length and shortest is None:
            if rel.max_hops is None:
                raise DialectError(
                    "variable-length relationship without an upper bound: Ladybug silently caps "
                    f"it at {self.max_hops} hops; give one, e.g. *1..5"
                )
            if rel.max_hops > self.max_hops:
                raise DialectError(
                    f"variable-length upper bound {rel.max_hops} exceeds Ladybug's maximum of {self.max_hops} hops"
                )
            if rel.min_hops is None:
                rel.set("min_hops", 1)
            rel.set("ladybug_mode", "TRAIL")  # Neo4j never repeats a relationship in a path
        if rel.properties is not None:
            rel.set("properties", self.expr(rel.properties, scope))
        if rel.where is not None:
            if rel.variable_length:
                raise DialectError("WHERE inside a variable-length relationship is not supported")
            scope_with = dict(scope)
            if rel.variable is not None:
                scope_with[str(rel.variable.this)] = REL
            extra.append(self.expr(rel.where.this, scope_with))
            rel.set("where", None)
        if rel.variable is not None:
            scope[str(rel.variable.this)] = VARREL if rel.variable_length else REL
        return extra

    def uniqueness(self, rels: list[a.RelationshipPattern]) -> list[a.AstNode]:
        """Neo4j binds a relationship at most once per MATCH; Ladybug may bind it twice. Add
        one inequality per pair of relationship patterns that could bind the same one."""
        names = [str(r.variable.this) for r in rels if r.variable is not None]
        for name in names:
            if names.count(name) > 1:
                raise DialectError(f"relationship variable {name} is used twice in one MATCH (Neo4j refuses it)")
        predicates: list[a.AstNode] = []
        for i, first in enumerate(rels):
            for second in rels[i + 1 :]:
                if not _types_overlap(first, second):
                    continue
                predicates.append(self.distinct(first, second))
        return predicates

    def _var(self, rel: a.RelationshipPattern) -> str:
        if rel.variable is None:
            rel.set("variable", _ident(self.fresh()))
        return str(rel.variable.this)

    def distinct(self, first: a.RelationshipPattern, second: a.RelationshipPattern) -> a.AstNode:
        x, y = self._var(first), self._var(second)
        if first.variable_length and second.variable_length:
            return a.Not(this=_call("list_has_any", _rel_ids(x), _rel_ids(y)))
        if first.variable_length or second.variable_length:
            var, fixed = (x, y) if first.variable_length else (y, x)
            return a.Not(this=_call("list_contains", _rel_ids(var), _call("id", _ident(fixed))))
        return a.NEQ(this=_call("id", _ident(x)), expression=_call("id", _ident(y)))

    # -- expressions -------------------------------------------------------------------------

    def expr(self, node: a.AstNode | None, scope: Scope) -> a.AstNode | None:
        if node is None:
            return None
        special = _SPECIAL.get(type(node))
        if special is not None:
            return special(self, node, scope)
        self.children(node, scope)
        rewrite = _NODE_REWRITES.get(type(node))
        return node if rewrite is None else rewrite(node)

    def children(self, node: a.AstNode, scope: Scope) -> None:
        for key, value in list(node.args.items()):
            node.args[key] = self._value(value, scope)
            if isinstance(node.args[key], a.AstNode):
                node.args[key].parent = node

    def _value(self, value: object, scope: Scope) -> object:
        if isinstance(value, a.AstNode):
            return self.expr(value, scope)
        if isinstance(value, list):
            return [self._value(v, scope) for v in value]
        if isinstance(value, tuple):
            return tuple(self._value(v, scope) for v in value)
        return value

    # special forms (own scoping or structure)

    def identifier(self, node: a.Identifier, scope: Scope) -> a.AstNode:
        if scope.get(str(node.this)) == VARREL:  # Neo4j: a list of relationships
            return _call("rels", node)
        return node

    def alias(self, node: a.Alias, scope: Scope) -> a.AstNode:
        node.set("this", self.expr(node.this, scope))
        return node

    def function(self, node: a.FunctionCall, scope: Scope) -> a.AstNode:
        name = str(node.name).lower()
        rewrite = _FUNCTION_REWRITES.get(name)
        if rewrite is None:
            raise DialectError(
                f"function {node.name}() is not supported on the Ladybug engine (not a Neo4j "
                "function, or no equivalent with the same meaning)"
            )
        node.set("expressions", [self.expr(e, scope) for e in node.expressions])
        return rewrite(node)

    def subquery(self, node: a.PatternPredicate | a.CountSubquery, scope: Scope) -> a.AstNode:
        key = "pattern" if isinstance(node, a.PatternPredicate) else "query"
        inner = node.args[key]
        if isinstance(inner, a.PathPattern):  # (a)-->(b) as a predicate / COUNT { (a)-->(b) }
            inner = a.Query(clauses=[a.Match(pattern=a.Pattern(paths=[inner]))])
        if not (
            isinstance(inner, a.Query)
            and len(inner.clauses) == 1
            and isinstance(inner.clauses[0], a.Match)
            and not inner.clauses[0].optional
        ):
            what = "EXISTS { }" if key == "pattern" else "COUNT { }"
            raise DialectError(f"{what} with clauses other than one MATCH … WHERE is not supported by Ladybug")
        self.match(inner.clauses[0], dict(scope))
        node.set(key, inner)
        return node

    def comprehension(self, node: a.ListComprehension, scope: Scope) -> a.AstNode:
        var = str(node.variable.this)
        entities = _entity_list(node.source, scope)
        source = self.expr(node.source, scope)
        inner = {**scope, var: VALUE}
        where = self.expr(node.where, inner)
        projection = self.expr(node.projection, inner)
        if entities:
            return self.entity_comprehension(var, source, where, projection)
        result = source
        if isinstance(projection, a.Identifier) and str(projection.this) == var:
            projection = None  # [x IN l | x] is l
        if where is not None:
            result = _call("list_filter", result, LadybugLambda(variable=_ident(var), body=where))
        if projection is not None:
            result = _call("list_transform", result, LadybugLambda(variable=_ident(var), body=projection))
        return result

    def quantifier(self, node: a.Quantifier, scope: Scope) -> a.AstNode:
        var = str(node.variable.this)
        entities = _entity_list(node.source, scope)
        source = self.expr(node.source, scope)
        where = self.expr(node.where, {**scope, var: VALUE})
        if entities:
            index = self.fresh(f"{GENERATED_PREFIX}i")
            where = _by_index(var, index, source, where)
            node.set("variable", _ident(index))
            source = _call("range", _int(1), _call("size", source.copy()))
        node.set("source", source)
        node.set("where", where)
        return node

    def entity_comprehension(
        self, var: str, source: a.AstNode, where: a.AstNode | None, projection: a.AstNode | None
    ) -> a.AstNode:
        """Ladybug 0.22 evaluates lambdas over lists of nodes/relationships wrongly once a
        query has several rows; lambdas over *positions* are fine. So ``[x IN l WHERE x.a > 1 |
        x.b]`` becomes ``list_transform(list_filter(range(1, size(l)), i -> properties(l, 'a')[i]
        > 1), i -> properties(l, 'b')[i])``."""
        index = self.fresh(f"{GENERATED_PREFIX}i")
        positions: a.AstNode = _call("range", _int(1), _call("size", source.copy()))
        if where is not None:
            body = _by_index(var, index, source, where)
            lam = LadybugLambda(variable=_ident(index), body=body)
            positions = _call("list_filter", positions, lam)
        if projection is None or (isinstance(projection, a.Identifier) and projection.this == var):
            if where is None:
                return source
            body = _call("list_extract", source.copy(), _ident(index))
        else:
            body = _by_index(var, index, source, projection)
        return _call("list_transform", positions, LadybugLambda(variable=_ident(index), body=body))

    def label_predicate(self, node: a.LabelPredicate, scope: Scope) -> a.AstNode:
        """``n:A`` → ``label(n) = 'A'``; ``n:A:B`` → AND; ``n:A|B`` → OR (one label a node)."""
        subject = self.expr(node.this, scope)
        labels = node.labels
        if labels.expression is not None:
            names, joiner = str(labels.expression).split("|"), a.Or
            if not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n) for n in names):
                raise DialectError(f"label expression :{labels.expression} is not supported")
        else:
            names, joiner = list(labels.labels), a.And
        result: a.AstNode | None = None
        for name in names:
            test = a.EQ(this=_call("label", subject.copy()), expression=_str(name))
            result = test if result is None else joiner(this=result, expression=test)
        return result

    def map_projection(self, node: a.MapProjection, scope: Scope) -> a.AstNode:
        """``n {.a, b: expr, v}`` → ``CASE WHEN n IS NULL THEN NULL ELSE {a: n.a, …} END``."""
        subject = self.expr(node.this, scope)
        entries: list[tuple[str, a.AstNode]] = []
        for entry in node.entries:
            if isinstance(entry, a.Star):
                raise DialectError(
                    "map projection with .* is not supported: Ladybug includes null-valued "
                    "properties; list the properties"
                )
            if isinstance(entry, a.PropertySelector):
                entries.append((str(entry.name), a.Property(this=subject.copy(), name=entry.name)))
            elif isinstance(entry, tuple):
                entries.append((str(entry[0]), self.expr(entry[1], scope)))
            else:
                entries.append((str(entry), self.expr(_ident(str(entry)), scope)))
        return _null_safe(subject, a.Map(entries=entries))

    def refuse(self, node: a.AstNode, scope: Scope) -> a.AstNode:
        raise _REFUSALS[type(node)]

    def shortest(self, node: a.ShortestPath, scope: Scope) -> a.AstNode:
        raise DialectError("shortestPath() is only supported in MATCH p = shortestPath(…)")


def _reads_property(expr: a.AstNode, var: str) -> bool:
    return isinstance(expr, a.Property) and isinstance(expr.this, a.Identifier) and expr.this.this == var


def _by_index(var: str, index: str, source: a.AstNode, expr: a.AstNode) -> a.AstNode:
    """``expr`` with every ``var.prop`` replaced by ``list_extract(properties(source, 'prop'),
    index)``; any other use of ``var`` is refused (it would need the element itself)."""
    if _reads_property(expr, var):
        return _call("list_extract", _call("properties", source.copy(), _str(str(expr.name))), _ident(index))
    if isinstance(expr, a.Identifier) and expr.this == var:
        raise DialectError(
            "a list comprehension or quantifier over nodes or relationships may only read their "
            f"properties ({var}.prop): Ladybug 0.22 evaluates other uses of {var} wrongly"
        )
    for key, value in list(expr.args.items()):
        if isinstance(value, a.AstNode):
            expr.set(key, _by_index(var, index, source, value))
        elif isinstance(value, list):
            expr.set(key, [_by_index_value(var, index, source, v) for v in value])
    return expr


def _by_index_value(var: str, index: str, source: a.AstNode, value: object) -> object:
    if isinstance(value, a.AstNode):
        return _by_index(var, index, source, value)
    if isinstance(value, tuple):
        return tuple(_by_index_value(var, index, source, v) for v in value)
    return value


# --------------------------------------------------------------------------------------------
# Node rewrites (after children are rewritten)
# --------------------------------------------------------------------------------------------


def _one_based(index: a.AstNode) -> a.AstNode:
    """A Neo4j (0-based, negative from the end) position → Ladybug (1-based, same negatives)."""
    value = _int_literal(index)
    if value is not None:
        return _int(value + 1 if value >= 0 else value)
    return _case(
        None, [(a.GTE(this=index.copy(), expression=_int(0)), a.Add(this=index.copy(), expression=_int(1)))], index
    )


def _exclusive_end(end: a.AstNode) -> a.AstNode:
    """Neo4j's exclusive slice end → Ladybug's inclusive 1-based end: ``e`` stays ``e`` when
    non-negative and becomes ``e - 1`` when negative."""
    value = _int_literal(end)
    if value is not None:
        return _int(value if value >= 0 else value - 1)
    return _case(None, [(a.LT(this=end.copy(), expression=_int(0)), a.Sub(this=end.copy(), expression=_int(1)))], end)


def _subscript(node: a.ListSubscript) -> a.AstNode:
    if isinstance(node.index, a.String):  # map['key'] / n['prop'] (static key)
        return a.Property(this=node.this, name=node.index.this)
    node.set("index", _one_based(node.index))
    return node


def _slice(node: a.ListSlice) -> a.AstNode:
    if node.start is not None:
        node.set("start", _one_based(node.start))
    if node.end is not None:
        node.set("end", _exclusive_end(node.end))
    return node


_NODE_REWRITES: Final[dict[type[a.AstNode], Callable[[a.AstNode], a.AstNode]]] = {
    a.ListSubscript: _subscript,
    a.ListSlice: _slice,
}

_REFUSALS: Final[dict[type[a.AstNode], GraphError]] = {
    a.PatternComprehension: DialectError(
        "pattern comprehension [(a)-->(b) | b.x] is not supported by Ladybug: use OPTIONAL MATCH … WITH collect(…)"
    ),
    a.ListLambda: DialectError(
        "reduce()/filter()/extract() are not supported: use a list comprehension, or aggregate with UNWIND … WITH"
    ),
}

_SPECIAL: Final[dict[type[a.AstNode], Callable[[_ToLadybug, a.AstNode, Scope], a.AstNode]]] = {
    a.Identifier: _ToLadybug.identifier,
    a.Alias: _ToLadybug.alias,
    a.FunctionCall: _ToLadybug.function,
    a.PatternPredicate: _ToLadybug.subquery,
    a.CountSubquery: _ToLadybug.subquery,
    a.ListComprehension: _ToLadybug.comprehension,
    a.Quantifier: _ToLadybug.quantifier,
    a.LabelPredicate: _ToLadybug.label_predicate,
    a.MapProjection: _ToLadybug.map_projection,
    a.ShortestPath: _ToLadybug.shortest,
    a.PatternComprehension: _ToLadybug.refuse,
    a.ListLambda: _ToLadybug.refuse,
    LadybugLambda: lambda _self, node, _scope: node,
}


def _types_overlap(first: a.RelationshipPattern, second: a.RelationshipPattern) -> bool:
    if not first.types or not second.types:
        return True
    return bool(set(first.types) & set(second.types))


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------


class LadybugRenderer(CypherRenderer):
    """Renders the rewritten tree in Ladybug's dialect."""

    dialect_name = "ladybug"

    def render_Cypher(self, node: a.Cypher) -> str:
        return self.dispatch(node.this)  # no CYPHER <version> prefix in Ladybug

    def render_LadybugLambda(self, node: LadybugLambda) -> str:
        return f"{self.dispatch(node.variable)} -> {self.dispatch(node.body)}"

    def render_Property(self, node: a.Property) -> str:
        inner = self.dispatch(node.this)
        if not isinstance(node.this, a.Identifier | a.Property | a.Parameter | a.FunctionCall):
            inner = f"({inner})"  # Ladybug cannot parse rels(e)[1].since
        return f"{inner}.{self._identifier(node.name)}"

    def render_RelationshipPattern(self, node: a.RelationshipPattern) -> str:
        inner: list[str] = []
        if node.variable:
            inner.append(self.dispatch(node.variable))
        if node.types:
            inner.append(":" + "|".join(self._identifier(t) for t in node.types))
        if node.variable_length:
            mode = node.args.get("ladybug_mode")
            low = 1 if node.min_hops is None else node.min_hops
            high = node.max_hops
            bounds = f"{low}..{high}" if high is not None else f"{low}.."
            inner.append(f"* {mode} {bounds}" if mode else f"*{bounds}")
        if node.properties:
            inner.append(" " + self.dispatch(node.properties))
        body = f"[{''.join(inner)}]"
        if node.direction is a.Direction.OUTGOING:
            return f"-{body}->"
        if node.direction is a.Direction.INCOMING:
            return f"<-{body}-"
        return f"-{body}-"


_LADYBUG_RENDERER = LadybugRenderer()


def to_ladybug(parsed: ParsedQuery, *, max_hops: int = LADYBUG_MAX_HOPS) -> str:
    """Rewrite a parsed, safety-checked Neo4j query into Ladybug text with the same answer.

    ``max_hops`` is the connection's ``var_length_extend_max_depth`` (Ladybug's default 30):
    the bound given to unbounded ``shortestPath`` and the largest explicit bound accepted.
    Raises :class:`DialectError` for constructs that would silently differ.

    >>> from components.cypher.parse import parse_query
    >>> to_ladybug(parse_query("MATCH (a)-[r:KNOWS]->(b) RETURN type(r)"))
    'MATCH (a)-[r:KNOWS]->(b) RETURN label(r) AS `type(r)`'
    """
    return _memo("ladybug", parsed, max_hops, lambda: _rewrite_ladybug(parsed, max_hops))


def _rewrite_ladybug(parsed: ParsedQuery, max_hops: int) -> str:
    tree = alias_return_columns(parsed.tree.copy())
    _ToLadybug(tree, max_hops).statement(tree, {})
    try:
        return _LADYBUG_RENDERER.generate(tree)
    except GraphError:
        raise
    except Exception as err:  # a node without a renderer: refuse rather than guess
        raise DialectError(f"cannot express this query for Ladybug: {err}") from None
