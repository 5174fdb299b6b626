"""Static data flow of a final program: does its printed answer come from ``cypher()`` results,
and does Python merely *move* values out of them or *select / compute* the answer?

:func:`answer_flow` reads the program (never runs it) and follows the value of the last
top-level ``print(...)``'s argument back through assignments, with two kinds of dependency:

* **data** — the value is built from a traced result (``r.rows[0][0]``, ``rec["m"]["title"]``,
  ``len(r.rows)``, a comprehension over ``r.records()`` …);
* **control** — the value was assigned under a loop or test that depends on a traced result
  (``found = True`` inside ``if row[0] == …``), so *which* value reaches the print depends on the
  data even when each assignment is a literal.

It also records what Python did on the way (:attr:`AnswerFlow.ops`): ``compare``, ``branch``,
``filter``, ``select`` (``max``/``min``, a computed index, indexing a sorted list), ``arith``,
``format``, ``call`` (a user-defined or unknown function) and ``emptiness`` (``bool(r.rows)``,
``len(r) > 0``, ``not r.rows``). A *guard* is not a selection: ``x if r.rows else None``,
``… if row[0] is not None``, ``x or []`` only decide between the value and no answer at all.

Outcome (:attr:`AnswerFlow.verdict`):

* ``independent`` — conclusively no traced result reaches the printed value (a literal, or a
  value computed from literals only): the certifier's ``hard_coded_answer``;
* ``dependent`` — conclusively built from traced results, no literal can reach it;
* ``inconclusive`` — a literal may reach it next to traced data (``best = 0`` before a loop,
  ``x * 0 + 8``), or the program uses what this reader does not follow (a user-defined function,
  a class, a ``print`` inside a block, several prints): the certifier then replays the program
  on perturbed rows (:mod:`components.certify.grounding`).

The analysis is flow-sensitive at the top level (a later assignment replaces an earlier one) and
merges the branches of every compound statement.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import Final

__all__ = ["COMPUTING_OPS", "AnswerFlow", "answer_flow"]

#: operations that mean Python chose or computed the answer (not a plain move of values)
COMPUTING_OPS: Final = frozenset({"compare", "branch", "filter", "select", "arith", "format", "call"})

_MOVE_FUNCS: Final = frozenset(
    {
        "str",
        "int",
        "float",
        "list",
        "set",
        "frozenset",
        "tuple",
        "sorted",
        "len",
        "bool",
        "dict",
        "zip",
        "enumerate",
        "iter",
        "next",
        "reversed",
        "dumps",
        "loads",
        "strip",
        "lower",
        "upper",
        "title",
        "casefold",
        "keys",
        "values",
        "items",
        "get",
        "records",
        "copy",
        "join",
        "split",
        "lstrip",
        "rstrip",
    }
)
_SELECT_FUNCS: Final = frozenset({"max", "min", "filter", "most_common", "index", "count", "choice"})
_ARITH_FUNCS: Final = frozenset(
    {
        "sum",
        "abs",
        "round",
        "pow",
        "divmod",
        "mean",
        "median",
        "fsum",
        "sqrt",
        "floor",
        "ceil",
        "prod",
        "mode",
        "stdev",
        "variance",
        "log",
        "exp",
    }
)
_COMPARE_FUNCS: Final = frozenset({"any", "all", "isinstance", "startswith", "endswith"})
_MUTATORS: Final = frozenset({"append", "add", "extend", "update", "insert", "setdefault", "appendleft"})


@dataclass(frozen=True)
class _V:
    """Abstract value: the traced sources it is built from (``deps``) and those that decided
    which assignment reached it (``ctrl``), operations on the way, whether a literal may reach it
    unconditionally, whether it is the constant None / an empty container, whether it is sorted."""

    deps: frozenset[str] = frozenset()
    ops: frozenset[str] = frozenset()
    literal: bool = False
    none: bool = False
    ordered: bool = False
    ctrl: frozenset[str] = frozenset()

    def join(self, other: _V) -> _V:
        return _V(
            self.deps | other.deps,
            self.ops | other.ops,
            self.literal or other.literal,
            self.none and other.none,
            self.ordered and other.ordered,
            self.ctrl | other.ctrl,
        )

    def plus(self, *ops: str) -> _V:
        return replace(self, ops=self.ops | frozenset(ops), none=False)

    def moved(self, *, ops: frozenset[str] | None = None, literal: bool | None = None) -> _V:
        """The same dependencies in a new value (not None, not sorted)."""
        return _V(
            self.deps,
            self.ops if ops is None else ops,
            self.literal if literal is None else literal,
            False,
            False,
            self.ctrl,
        )


_NEUTRAL = _V()
_NONE = _V(none=True)


@dataclass
class AnswerFlow:
    verdict: str  # independent | dependent | inconclusive
    sources: frozenset[str] = frozenset()
    ops: frozenset[str] = frozenset()
    detail: str = ""

    @property
    def computed(self) -> bool:
        """Python selected or computed the answer (or a literal takes part in it)."""
        return bool(self.ops & COMPUTING_OPS) or self.verdict == "inconclusive"

    @property
    def emptiness(self) -> bool:
        return "emptiness" in self.ops


class _Unsupported(Exception):
    pass


@dataclass
class _Reader:
    answer_type: str = ""
    env: dict[str, _V] = field(default_factory=dict)
    functions: set[str] = field(default_factory=set)
    control: frozenset[str] = frozenset()  # sources the current block's execution depends on
    sites: int = 0
    unsure: list[str] = field(default_factory=list)

    # -- expressions ---------------------------------------------------------------------
    def expr(self, node: ast.AST | None) -> _V:
        if node is None:
            return _NEUTRAL
        method = getattr(self, f"e_{type(node).__name__}", None)
        if method is None:
            self.unsure.append(type(node).__name__)
            return self._children(node).moved(literal=True)
        return method(node)

    def _children(self, node: ast.AST) -> _V:
        out = _NEUTRAL
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                out = out.join(self.expr(child))
        return out

    def e_Constant(self, node: ast.Constant) -> _V:
        return _NONE if node.value is None else _V(literal=True)

    def e_Name(self, node: ast.Name) -> _V:
        return self.env.get(node.id, _NEUTRAL)

    def e_Attribute(self, node: ast.Attribute) -> _V:
        return self.expr(node.value).moved()

    def e_Subscript(self, node: ast.Subscript) -> _V:
        base, index = self.expr(node.value), self.expr(node.slice)
        out = base.join(_V(index.deps, index.ops, ctrl=index.ctrl)).moved()
        if index.deps or (base.ordered and not isinstance(node.slice, ast.Slice)):
            out = out.plus("select")  # a computed index, or sorted(...)[0]: chosen by Python
        return out

    def e_Slice(self, node: ast.Slice) -> _V:
        out = _NEUTRAL
        for part in (node.lower, node.upper, node.step):
            out = out.join(self.expr(part).moved(literal=False))
        return out

    def e_Tuple(self, node: ast.Tuple) -> _V:
        return self._container(node.elts)

    e_List = e_Set = e_Tuple

    def _container(self, elts: list[ast.expr]) -> _V:
        if not elts:
            return _NONE  # an empty container: no answer
        out = _NEUTRAL
        for e in elts:
            out = out.join(self.expr(e))
        return out.moved()

    def e_Dict(self, node: ast.Dict) -> _V:
        return self._container([k for k in node.keys if k is not None] + list(node.values))

    def e_Starred(self, node: ast.Starred) -> _V:
        return self.expr(node.value)

    def e_JoinedStr(self, node: ast.JoinedStr) -> _V:
        out = _NEUTRAL
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                out = out.join(self.expr(v.value))
        if any(isinstance(v, ast.Constant) and v.value for v in node.values):
            return out.moved(ops=out.ops | {"format"}, literal=True)
        return out.moved()

    def e_FormattedValue(self, node: ast.FormattedValue) -> _V:
        return self.expr(node.value)

    def e_BinOp(self, node: ast.BinOp) -> _V:
        return self.expr(node.left).join(self.expr(node.right)).plus("arith")

    def e_UnaryOp(self, node: ast.UnaryOp) -> _V:
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            return v.moved(ops=v.ops | {"emptiness"}, literal=False)
        return v.plus("arith")

    def e_Compare(self, node: ast.Compare) -> _V:
        out = self.expr(node.left)
        for c in node.comparators:
            out = out.join(self.expr(c))
        if _emptiness_test(node):
            op = "emptiness"
        elif all(isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops):
            op = "guard"
        else:
            op = "compare"
        return out.moved(ops=out.ops | {op}, literal=False)  # a comparison's result is no literal

    def e_BoolOp(self, node: ast.BoolOp) -> _V:
        values = [self.expr(v) for v in node.values]
        data = [v for v, n in zip(values, node.values, strict=True) if not v.none and not _is_empty(n)]
        if isinstance(node.op, ast.Or) and len(data) == 1 and len(values) > 1:
            return data[0]  # x or []: a guard
        out = _NEUTRAL
        for v in values:
            out = out.join(v)
        return out.plus("branch")

    def e_IfExp(self, node: ast.IfExp) -> _V:
        test, body, orelse = self.expr(node.test), self.expr(node.body), self.expr(node.orelse)
        if orelse.none or _is_empty(node.orelse):
            return body  # <value> if <data> else None: a guard
        if body.none or _is_empty(node.body):
            return orelse
        out = body.join(orelse)
        if test.deps or test.ctrl:
            return _V(out.deps, out.ops | test.ops | {"branch"}, False, False, False, out.ctrl | test.deps | test.ctrl)
        return out

    def _comprehension(self, generators: list[ast.comprehension], elements: list[ast.expr]) -> _V:
        saved = dict(self.env)
        extra: set[str] = set()
        try:
            for gen in generators:
                self.assign(gen.target, self.expr(gen.iter).moved(), under_control=False)
                for cond in gen.ifs:
                    if not _guard(cond, self.expr(cond)):
                        extra.add("filter")
            out = _NEUTRAL
            for e in elements:
                out = out.join(self.expr(e))
        finally:
            self.env = saved
        return out.moved(ops=out.ops | frozenset(extra))

    def e_ListComp(self, node: ast.ListComp) -> _V:
        return self._comprehension(node.generators, [node.elt])

    e_SetComp = e_GeneratorExp = e_ListComp

    def e_DictComp(self, node: ast.DictComp) -> _V:
        return self._comprehension(node.generators, [node.key, node.value])

    def e_Lambda(self, node: ast.Lambda) -> _V:
        self.unsure.append("lambda")
        return _V(ops=frozenset({"call"}))

    def e_NamedExpr(self, node: ast.NamedExpr) -> _V:
        v = self.expr(node.value)
        self.assign(node.target, v)
        return v

    def e_Call(self, node: ast.Call) -> _V:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        args = [self.expr(a) for a in node.args]
        # a sort key (a function, often a lambda) orders values, it is not one: not followed
        kwargs = {k.arg: (_NEUTRAL if k.arg == "key" else self.expr(k.value)) for k in node.keywords}
        joined = _NEUTRAL
        for v in args + list(kwargs.values()):
            joined = joined.join(v)
        if isinstance(func, ast.Name) and name == "cypher":
            self.sites += 1
            return _V(joined.deps | joined.ctrl | {f"r{self.sites}@{node.lineno}"})
        if isinstance(func, ast.Name) and name in self.functions:
            self.unsure.append(f"a call of {name}()")
            return joined.moved(ops=joined.ops | {"call"}, literal=True)
        base = self.expr(func.value) if isinstance(func, ast.Attribute) else _NEUTRAL
        if isinstance(func, ast.Attribute) and name in _MUTATORS and isinstance(func.value, ast.Name):
            grown = self.env.get(func.value.id, _NEUTRAL).join(self._under_control(joined))
            self.env[func.value.id] = grown.moved()
            return _NONE
        first = args[0] if args else _NEUTRAL
        if name == "sorted":  # orders values (a later [0] is a selection, see e_Subscript)
            return replace(first.join(base), none=False, ordered=True)
        if name == "len":
            return first.moved(literal=False)
        if name == "bool" and isinstance(func, ast.Name):
            return first.moved(ops=first.ops | {"emptiness"}, literal=False)
        if name == "round":
            return first.plus("arith")
        merged = base.join(joined)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Constant):
            # "; ".join(names): the separator is formatting, not the answer
            merged = joined.moved(ops=joined.ops | (set() if name == "join" else {"format"}))
        elif isinstance(func, ast.Attribute):
            merged = merged.moved(literal=base.literal)  # x.get("k"), x.strip(): the value is x's
        elif name not in _SELECT_FUNCS | _ARITH_FUNCS:
            merged = merged.moved(literal=first.literal)
        if name in _SELECT_FUNCS:
            return merged.moved(ops=merged.ops | {"select"})
        if name in _ARITH_FUNCS:
            return merged.moved(ops=merged.ops | {"arith"})
        if name in _COMPARE_FUNCS:
            return merged.moved(ops=merged.ops | {"compare"}, literal=False)
        if name in _MOVE_FUNCS or name == "print":
            return merged.moved()
        return merged.moved(ops=merged.ops | {"call"})

    # -- statements ----------------------------------------------------------------------
    def _under_control(self, value: _V) -> _V:
        """``value`` assigned where the code's path depends on ``self.control``."""
        if not self.control:
            return value
        return _V(value.deps, value.ops, False, value.none, value.ordered, value.ctrl | self.control)

    def assign(self, target: ast.AST, value: _V, *, under_control: bool = True) -> None:
        if under_control:
            value = self._under_control(value)
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self.assign(t.value if isinstance(t, ast.Starred) else t, value.moved(), under_control=False)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            root = target
            while isinstance(root, (ast.Subscript, ast.Attribute)):
                root = root.value
            if isinstance(root, ast.Name):
                self.env[root.id] = self.env.get(root.id, _NEUTRAL).join(value).moved()
        else:
            raise _Unsupported(type(target).__name__)

    def block(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, node: ast.stmt) -> None:  # noqa: C901 - one case per statement kind
        if isinstance(node, ast.Assign):
            v = self.expr(node.value)
            for t in node.targets:
                self.assign(t, v)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.assign(node.target, self.expr(node.value))
        elif isinstance(node, ast.AugAssign):
            old = self.expr(node.target) if isinstance(node.target, ast.Name) else _NEUTRAL
            self.assign(node.target, old.join(self.expr(node.value)).plus("arith"))
        elif isinstance(node, ast.Expr):
            self.expr(node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            it = self.expr(node.iter)
            self._branches(it.deps | it.ctrl, frozenset(), [node.body, node.orelse], (node.target, it.moved()))
        elif isinstance(node, ast.While):
            test = self.expr(node.test)
            self._branches(test.deps | test.ctrl, _test_ops(node.test, test), [node.body, node.orelse])
        elif isinstance(node, ast.If):
            test = self.expr(node.test)
            self._branches(test.deps | test.ctrl, _test_ops(node.test, test), [node.body, node.orelse])
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            bodies = [node.body, *(h.body for h in node.handlers), node.orelse]  # type: ignore[attr-defined]
            self._branches(frozenset(), frozenset(), bodies)
            self.block(node.finalbody)  # type: ignore[attr-defined]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                v = self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, v)
            self.block(node.body)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.functions.add(node.name)
            self.env.pop(node.name, None)
        elif not isinstance(
            node,
            (
                ast.Import,
                ast.ImportFrom,
                ast.Pass,
                ast.Break,
                ast.Continue,
                ast.Global,
                ast.Nonlocal,
                ast.Delete,
                ast.Raise,
                ast.Assert,
            ),
        ):
            raise _Unsupported(type(node).__name__)

    def _branches(
        self,
        deps: frozenset[str],
        test_ops: frozenset[str],
        bodies: list[list[ast.stmt]],
        loop: tuple[ast.AST, _V] | None = None,
    ) -> None:
        """Run each body from the current state and merge them with the state before (a body
        may not run). Under a data-dependent path every assignment carries ``deps`` as control
        and the test's operations, and is no longer an unconditional literal."""
        before, saved = dict(self.env), self.control
        self.control = saved | deps
        results = []
        for i, body in enumerate(bodies):
            self.env = dict(before)
            for _ in range(2 if loop is not None and i == 0 else 1):  # a loop body sees its own effects
                if loop is not None and i == 0:
                    self.assign(loop[0], loop[1], under_control=False)
                self.block(body)
            results.append(self.env)
        self.control = saved
        merged = dict(before)
        for env in results:
            for name, v in env.items():
                if before.get(name) is not v:
                    merged[name] = v if merged.get(name) is None else merged[name].join(v)
        if deps:
            for name, v in merged.items():
                if before.get(name) is not v:
                    merged[name] = _V(v.deps, v.ops | test_ops, False, v.none, v.ordered, v.ctrl | deps)
        self.env = merged


def _emptiness_test(node: ast.Compare) -> bool:
    """``len(x) > 0``, ``len(x) != 0``, ``len(x) >= 1``, ``len(x) == 0``, ``x.row_count > 0``."""
    if len(node.ops) != 1:
        return False
    left, right = node.left, node.comparators[0]
    sized = (isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len") or (
        isinstance(left, ast.Attribute) and left.attr == "row_count"
    )
    return (
        sized
        and isinstance(right, ast.Constant)
        and right.value in (0, 1)
        and isinstance(node.ops[0], (ast.Gt, ast.NotEq, ast.GtE, ast.Eq, ast.Lt, ast.LtE))
    )


def _test_ops(node: ast.AST, value: _V) -> frozenset[str]:
    """What a statement's test adds to the values it decides: nothing for a guard, else a branch."""
    if _guard(node, value):
        truthiness = isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.UnaryOp))
        return frozenset(value.ops & {"emptiness"}) | ({"emptiness"} if truthiness else frozenset())
    return frozenset(value.ops | {"branch"})


def _elements(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Dict):
        return list(node.keys)
    return list(getattr(node, "elts", []))


def _is_empty(node: ast.AST) -> bool:
    return isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)) and not _elements(node)


def _guard(node: ast.AST, value: _V) -> bool:
    """A test that only checks a value exists: ``x is not None``, ``x``, ``r.rows``, ``len(x) == 1``."""
    if isinstance(node, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
        return True
    if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _guard(node.operand, value)
    if isinstance(node, ast.BoolOp):
        return all(_guard(v, value) for v in node.values)
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.left, ast.Call)
        and isinstance(node.left.func, ast.Name)
        and node.left.func.id == "len"
        and isinstance(node.comparators[0], ast.Constant)
    ):
        return True
    return "guard" in value.ops and not (value.ops - {"guard", "emptiness"})


def _last_print(tree: ast.Module) -> tuple[int, ast.expr | None, str]:
    """Index of the top-level statement printing the answer, its argument, or a reason."""
    prints = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("print", "pprint")
    ]
    if not prints:
        return -1, None, "no print() call"
    top = [
        i
        for i, s in enumerate(tree.body)
        if isinstance(s, ast.Expr)
        and isinstance(s.value, ast.Call)
        and isinstance(s.value.func, ast.Name)
        and s.value.func.id == "print"
    ]
    if not top:
        return -1, None, "the answer is printed inside a block"
    last = top[-1]
    call = tree.body[last].value  # type: ignore[attr-defined]
    later = [s for s in tree.body[last + 1 :] if any(p in ast.walk(s) for p in prints)]
    if later:
        return -1, None, "print() after the last top-level print"
    if len(call.args) != 1 or call.keywords:
        return last, None, "print() with several arguments"
    return last, call.args[0], ""


def answer_flow(program: str, answer_type: str = "") -> AnswerFlow:
    """The data flow of ``program``'s printed answer (see the module docstring).

    >>> answer_flow("r = cypher('MATCH (n) RETURN n.name')\\nprint(r.rows[0][0])").verdict
    'dependent'
    >>> answer_flow("r = cypher('MATCH (n) RETURN n.name')\\nmark_evidence(r)\\nprint('Paris')").verdict
    'independent'
    """
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return AnswerFlow("inconclusive", detail=f"cannot read the program: {type(exc).__name__}")
    index, arg, why = _last_print(tree)
    if arg is None:
        return AnswerFlow("inconclusive", detail=why)
    reader = _Reader(answer_type)
    try:
        reader.block(tree.body[:index])
        value = reader.expr(arg)
    except (_Unsupported, RecursionError) as exc:
        return AnswerFlow("inconclusive", detail=f"not followed: {exc}")
    sources = value.deps | value.ctrl
    ops = value.ops - {"guard"}
    if reader.unsure:
        return AnswerFlow("inconclusive", sources, ops, "not followed: " + ", ".join(dict.fromkeys(reader.unsure)))
    if not sources:
        return AnswerFlow("independent", sources, ops, "the printed answer depends on no cypher() result")
    if value.literal:
        return AnswerFlow("inconclusive", sources, ops, "a literal may reach the printed answer")
    if not value.deps and answer_type != "boolean":
        # one of several literals, chosen by the data: ``'Paris' if rows else 'Oslo'``
        return AnswerFlow("inconclusive", sources, ops | {"branch"}, "a literal chosen by a test reaches the answer")
    return AnswerFlow("dependent", sources, ops, "the printed answer is built from cypher() results")
