"""Parsing Neo4j-dialect Cypher into a cached, shared AST (``cypherast``) and rendering it back.

:func:`parse_query` is the only place that calls the parser. Results are cached by query text
(queries repeat with different parameters), so the tree inside a :class:`ParsedQuery` is
**shared**: never mutate it — ``parsed.tree.copy()`` before transforming.

Rendering goes through :class:`CypherRenderer`, not ``node.cypher()``: cypherast 0.1.12's own
renderer drops parentheses (``(1 + 2) * 3`` comes back as ``1 + 2 * 3``), which would silently
change a query's meaning. ``CypherRenderer`` parenthesises by operator precedence.

Every failure is a :class:`~components.graph.errors.GraphError`: lexer and parser errors become
:class:`QuerySyntaxError` with the parser's line and column; more than one statement is an
:class:`UnsafeQueryError`; a few well-known Neo4j idioms the parser cannot read (``size()`` of a
pattern) get a specific :class:`DialectError` instead of a generic syntax error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cypherast import ast as a
from cypherast.errors import CypherastError
from cypherast.lexer import Token, TokenKind
from cypherast.parser import Parser
from cypherast.renderer import Renderer

from components.graph.errors import DialectError, GraphError, QuerySyntaxError, UnsafeQueryError

__all__ = [
    "MAX_QUERY_CHARS",
    "CypherRenderer",
    "ParsedQuery",
    "child_nodes",
    "iter_nodes",
    "parse_query",
    "render",
    "tokenize",
]

#: Longer queries are refused before lexing (a guard against pathological inputs).
MAX_QUERY_CHARS = 100_000

_CACHE_SIZE = 4096


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """One parsed statement.

    ``text`` is the query as given; ``source`` is what was parsed (``text`` without a trailing
    ``;``); ``tree`` is the shared ``cypherast`` AST (a ``Cypher`` node — do not mutate);
    ``tokens`` are the lexer's tokens of ``source`` (ending with EOF).
    """

    text: str
    source: str
    tree: a.Cypher
    tokens: tuple[Token, ...]

    @property
    def parameters(self) -> frozenset[str]:
        """Names of the ``$parameters`` the query references."""
        return frozenset(t.text for t in self.tokens if t.kind is TokenKind.PARAMETER)


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


def _syntax_error(err: CypherastError) -> QuerySyntaxError:
    """The parser's own message (first line, without code and position) with line/column."""
    first = str(err).splitlines()[0] if str(err) else "syntax error"
    prefix = f"[{err.code}]"
    if first.startswith(prefix):
        first = first[len(prefix) :].lstrip()
    if err.position is not None:
        pos = str(err.position)
        if first.startswith(pos):
            first = first[len(pos) :].lstrip()
        return QuerySyntaxError(first, err.position.line, err.position.col)
    return QuerySyntaxError(first)


def _matching_paren(tokens: tuple[Token, ...], start: int) -> int | None:
    """Index of the ``)`` closing the ``(`` at ``start``."""
    depth = 0
    for i in range(start, len(tokens)):
        kind = tokens[i].kind
        if kind is TokenKind.LPAREN:
            depth += 1
        elif kind is TokenKind.RPAREN:
            depth -= 1
            if depth == 0:
                return i
    return None


def _size_of_pattern(tokens: tuple[Token, ...]) -> GraphError | None:
    """``size((a)-[:R]->())``: Neo4j 4 counts paths; Ladybug returns the size of a string."""
    rel_start = {TokenKind.MINUS, TokenKind.ARROW_LEFT, TokenKind.ARROW_RIGHT}
    for i, tok in enumerate(tokens[:-3]):
        if (
            tok.kind is TokenKind.IDENT
            and tok.text.lower() == "size"
            and tokens[i + 1].kind is TokenKind.LPAREN
            and tokens[i + 2].kind is TokenKind.LPAREN
        ):
            end = _matching_paren(tokens, i + 2)
            if end is not None and end + 1 < len(tokens) and tokens[end + 1].kind in rel_start:
                return DialectError(
                    "size() of a pattern is not supported (Ladybug would silently return the "
                    "size of a string): count paths with COUNT { MATCH <pattern> } instead "
                    f"(line {tok.position.line}, column {tok.position.col})"
                )
    return None


_PATTERN_START = frozenset({TokenKind.EQ, TokenKind.MATCH, TokenKind.COMMA, TokenKind.LPAREN})


def _shortest_path_expression(tokens: tuple[Token, ...]) -> GraphError | None:
    """``shortestPath(...)`` outside ``MATCH p = shortestPath(...)`` (e.g. in RETURN)."""
    for i, tok in enumerate(tokens[1:], start=1):
        if tok.kind in (TokenKind.SHORTESTPATH, TokenKind.ALLSHORTESTPATHS) and (
            tokens[i - 1].kind not in _PATTERN_START
        ):
            name = "shortestPath" if tok.kind is TokenKind.SHORTESTPATH else "allShortestPaths"
            return DialectError(
                f"{name}() is only supported in MATCH p = {name}(...) "
                f"(line {tok.position.line}, column {tok.position.col})"
            )
    return None


#: Specific explanations for inputs the parser rejects; the first that applies wins.
_FAILURE_HINTS: tuple[Callable[[tuple[Token, ...]], GraphError | None], ...] = (
    _size_of_pattern,
    _shortest_path_expression,
)


# --------------------------------------------------------------------------------------------
# Lexing and parsing
# --------------------------------------------------------------------------------------------


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise QuerySyntaxError(f"query must be a string, not {type(text).__name__}")
    if len(text) > MAX_QUERY_CHARS:
        raise QuerySyntaxError(f"query is too long ({len(text)} > {MAX_QUERY_CHARS} characters)")
    return text


@lru_cache(maxsize=_CACHE_SIZE)
def _lex(text: str) -> tuple[Token, ...]:
    try:
        parser = Parser(text)
    except CypherastError as err:
        raise _syntax_error(err) from None
    return tuple(parser.tokens)


def tokenize(text: str) -> tuple[Token, ...]:
    """The lexer's tokens for ``text`` (cached). Comments and string contents are not tokens of
    their own, so keyword scans over tokens are immune to them. Raises :class:`QuerySyntaxError`.
    """
    return _lex(_check_text(text))


def _single_statement(text: str, tokens: tuple[Token, ...]) -> tuple[str, tuple[Token, ...]]:
    """Strip trailing ``;``; refuse anything after a ``;`` (one statement per query)."""
    semis = [i for i, t in enumerate(tokens) if t.kind is TokenKind.SEMICOLON]
    if not semis:
        return text, tokens
    first = semis[0]
    if any(t.kind not in (TokenKind.SEMICOLON, TokenKind.EOF) for t in tokens[first:]):
        count = 1 + sum(
            1 for i in semis if any(t.kind not in (TokenKind.SEMICOLON, TokenKind.EOF) for t in tokens[i + 1 :])
        )
        raise UnsafeQueryError(f"one statement per query: found {count} statements separated by ';'")
    source = text[: tokens[first].position.offset]
    return source, tokens[:first] + (tokens[-1],)


_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", re.S)
_UNICODE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\[uU]")


def _unicode_escape(text: str) -> GraphError | None:
    """cypherast 0.1.12 decodes ``\\uXXXX`` in a string literal as ``uXXXX``: a silent change of
    the value (``'Jos\\u00e9'`` would match nothing). Refuse it instead."""
    if "\\" not in text:
        return None
    for lit in _STRING_LITERAL.finditer(text):
        if _UNICODE_ESCAPE.search(lit.group(0)):
            return DialectError(
                "\\u unicode escapes in string literals are not supported (the parser would "
                "change the string): write the character itself or pass it as a parameter"
            )
    return None


@lru_cache(maxsize=_CACHE_SIZE)
def _parse(text: str) -> ParsedQuery:
    escape = _unicode_escape(text)
    if escape is not None:
        raise escape
    tokens = _lex(text)
    if len(tokens) <= 1 or all(t.kind in (TokenKind.SEMICOLON, TokenKind.EOF) for t in tokens):
        raise QuerySyntaxError("empty query: nothing to run")
    source, tokens = _single_statement(text, tokens)
    try:
        tree = Parser(source).parse()
    except CypherastError as err:
        for hint in _FAILURE_HINTS:
            better = hint(tokens)
            if better is not None:
                raise better from None
        raise _syntax_error(err) from None
    except RecursionError:
        raise QuerySyntaxError("query is nested too deeply to parse") from None
    if not isinstance(tree, a.Cypher):  # pragma: no cover - the parser always returns Cypher
        raise QuerySyntaxError(f"unexpected parse result {type(tree).__name__}")
    return ParsedQuery(text=text, source=source, tree=tree, tokens=tokens)


def parse_query(text: str) -> ParsedQuery:
    """Parse one Neo4j-dialect Cypher statement (cached by text; a hit costs ~0.1 µs).

    >>> parse_query("MATCH (n:Person) RETURN n.name").tree.this.clauses[0].__class__.__name__
    'Match'

    Raises :class:`QuerySyntaxError` (with line/column) when it does not parse or is empty,
    :class:`UnsafeQueryError` for several statements, :class:`DialectError` for known
    unparseable Neo4j idioms. The returned tree is shared: copy it before transforming.
    """
    return _parse(_check_text(text))


# --------------------------------------------------------------------------------------------
# Tree helpers (cypherast's own walk() skips nodes inside tuples: CASE branches, map entries)
# --------------------------------------------------------------------------------------------


def _nodes_in(value: Any) -> Iterator[a.AstNode]:
    if isinstance(value, a.AstNode):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _nodes_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _nodes_in(item)


def child_nodes(node: a.AstNode) -> Iterator[a.AstNode]:
    """Direct AST children, including those inside lists, tuples and dicts."""
    for value in node.args.values():
        yield from _nodes_in(value)


def iter_nodes(node: a.AstNode) -> Iterator[a.AstNode]:
    """Every node of the tree, pre-order (unlike ``AstNode.walk`` it descends into tuples)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        children = list(child_nodes(current))
        stack.extend(reversed(children))


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------

_ATOM = 100
_PRECEDENCE: dict[type[a.AstNode], int] = {
    a.Or: 1,
    a.Xor: 2,
    a.And: 3,
    a.Not: 4,
    **dict.fromkeys(
        (
            a.EQ,
            a.NEQ,
            a.LT,
            a.LTE,
            a.GT,
            a.GTE,
            a.RegexMatch,
            a.StartsWith,
            a.EndsWith,
            a.Contains,
            a.In,
            a.IsNull,
        ),
        5,
    ),
    a.Add: 6,
    a.Sub: 6,
    a.Mul: 7,
    a.Div: 7,
    a.Mod: 7,
    a.Pow: 8,
    a.Neg: 9,
    **dict.fromkeys((a.Property, a.ListSubscript, a.ListSlice, a.LabelPredicate), 10),
}

_BINARY_OPS: dict[type[a.AstNode], str] = {
    a.Or: "OR",
    a.Xor: "XOR",
    a.And: "AND",
    a.EQ: "=",
    a.NEQ: "<>",
    a.LT: "<",
    a.LTE: "<=",
    a.GT: ">",
    a.GTE: ">=",
    a.RegexMatch: "=~",
    a.StartsWith: "STARTS WITH",
    a.EndsWith: "ENDS WITH",
    a.Contains: "CONTAINS",
    a.In: "IN",
    a.Add: "+",
    a.Sub: "-",
    a.Mul: "*",
    a.Div: "/",
    a.Mod: "%",
    a.Pow: "^",
}


def precedence(node: a.AstNode | None) -> int:
    """Binding strength of an expression node (higher binds tighter; atoms are 100)."""
    if node is None:
        return _ATOM
    if isinstance(node, a.Integer | a.Float) and isinstance(node.this, int | float):
        if node.this < 0:  # a negative literal renders as unary minus
            return _PRECEDENCE[a.Neg]
    if isinstance(node, a.PatternPredicate) and node.not_:
        return _PRECEDENCE[a.Not]
    return _PRECEDENCE.get(type(node), _ATOM)


class CypherRenderer(Renderer):
    """cypherast's renderer with precedence-correct parentheses (both dialects)."""

    dialect_name = "neo4j"

    def _operand(self, node: a.AstNode, parent_prec: int, *, strict: bool) -> str:
        text = self.dispatch(node)
        prec = precedence(node)
        if prec < parent_prec or (strict and prec == parent_prec):
            return f"({text})"
        return text

    def _binary(self, node: a.Binary) -> str:
        prec = _PRECEDENCE[type(node)]
        right_assoc = isinstance(node, a.Pow)
        left = self._operand(node.this, prec, strict=right_assoc)
        right = self._operand(node.expression, prec, strict=not right_assoc)
        return f"{left} {_BINARY_OPS[type(node)]} {right}"

    def dispatch(self, node: a.AstNode | None) -> str:
        if isinstance(node, a.Binary) and type(node) in _BINARY_OPS:
            return self._binary(node)
        return super().dispatch(node)

    def render_Not(self, node: a.Not) -> str:
        return f"NOT {self._operand(node.this, _PRECEDENCE[a.Not], strict=False)}"

    def render_Neg(self, node: a.Neg) -> str:
        inner = self._operand(node.this, _PRECEDENCE[a.Neg], strict=True)
        return f"- {inner}" if inner.startswith("-") else f"-{inner}"

    def render_IsNull(self, node: a.IsNull) -> str:
        inner = self._operand(node.this, _PRECEDENCE[a.IsNull], strict=False)
        return f"{inner} IS{' NOT' if node.not_ else ''} NULL"

    def render_Property(self, node: a.Property) -> str:
        inner = self._operand(node.this, _PRECEDENCE[a.Property], strict=False)
        return f"{inner}.{self._identifier(node.name)}"

    def render_ListSubscript(self, node: a.ListSubscript) -> str:
        inner = self._operand(node.this, _PRECEDENCE[a.ListSubscript], strict=False)
        return f"{inner}[{self.dispatch(node.index)}]"

    def render_ListSlice(self, node: a.ListSlice) -> str:
        inner = self._operand(node.this, _PRECEDENCE[a.ListSlice], strict=False)
        start = "" if node.start is None else self.dispatch(node.start)
        end = "" if node.end is None else self.dispatch(node.end)
        return f"{inner}[{start}..{end}]"

    def render_LabelPredicate(self, node: a.LabelPredicate) -> str:
        inner = self._operand(node.this, _PRECEDENCE[a.LabelPredicate], strict=False)
        return f"{inner}{self.dispatch(node.labels)}"

    def render_Map(self, node: a.Map) -> str:
        parts = [f"{self._identifier(k)}: {self.dispatch(v)}" for k, v in node.entries]
        return "{" + ", ".join(parts) + "}"

    # -- names: everything the renderer emits as a name goes through _identifier ------------

    def render_LabelExpression(self, node: a.LabelExpression) -> str:
        if node.expression:
            parts = _LABEL_EXPR_TOKEN.findall(str(node.expression))
            body = "".join(p if p in _LABEL_EXPR_OPS else self._identifier(p) for p in parts)
            return f":{body}"
        return "".join(f":{self._identifier(lab)}" for lab in (node.labels or []))

    def render_FunctionCall(self, node: a.FunctionCall) -> str:
        name = str(node.name)
        if not _FUNCTION_NAME.fullmatch(name):
            raise QuerySyntaxError(f"invalid function name {name!r}")
        distinct = "DISTINCT " if node.distinct else ""
        args = ", ".join(self.dispatch(e) for e in node.expressions)
        return f"{name}({distinct}{args})"

    def render_MapProjection(self, node: a.MapProjection) -> str:
        parts: list[str] = []
        for entry in node.entries:
            if isinstance(entry, a.Star):
                parts.append(".*")
            elif isinstance(entry, a.PropertySelector):
                parts.append(f".{self._identifier(entry.name)}")
            elif isinstance(entry, tuple):
                parts.append(f"{self._identifier(entry[0])}: {self.dispatch(entry[1])}")
            else:
                parts.append(self._identifier(entry))
        return f"{self.dispatch(node.this)}{{{', '.join(parts)}}}"

    def render_PatternPredicate(self, node: a.PatternPredicate) -> str:
        """Pattern predicates as ``EXISTS { MATCH … }`` (Neo4j 5 and Ladybug both read it;
        ``exists((a)-->())`` is gone from Neo4j 5)."""
        pattern = node.pattern
        if isinstance(pattern, a.PathPattern):
            body = f"MATCH {self.dispatch(pattern)}"
        else:
            body = self.dispatch(pattern)
        text = f"EXISTS {{ {body} }}"
        return f"NOT {text}" if node.not_ else text

    def render_Match(self, node: a.Match) -> str:
        """Index hints (``USING …``) are dropped: they never change results, and the parser
        keeps them as raw text."""
        body = ("OPTIONAL MATCH " if node.optional else "MATCH ") + self.dispatch(node.pattern)
        if node.where:
            body += " " + self.dispatch(node.where)
        return body


_LABEL_EXPR_OPS = frozenset("|&!%()")
_LABEL_EXPR_TOKEN = re.compile(r"[|&!%()]|[^|&!%()]+")
_FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")

_RENDERER = CypherRenderer()


def render(node: a.AstNode) -> str:
    """Render an AST (sub)tree as Neo4j-dialect Cypher text, parenthesised by precedence."""
    return _RENDERER.generate(node)
