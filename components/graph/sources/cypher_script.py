"""Import a Cypher ``CREATE`` script (like Neo4j's "movies" example) into :class:`GraphData`.

The script is split into statements at top-level ``;`` (quotes, backticks, ``//`` and ``/* */``
comments respected), each statement is parsed by ``cypherast`` and *interpreted* — values must be
literals, nothing is ever evaluated or sent to a database. Supported:

* ``CREATE`` of nodes ``(v:Label {key: literal, ...})`` and paths
  ``(a)-[:TYPE {key: literal}]->(b)`` / ``(a)<-[:TYPE]-(b)``; several patterns per clause and
  several clauses per statement. Literals: strings, integers, floats (``-`` allowed), booleans,
  ``null`` (= property not set), lists of one kind of scalar, and ``date('YYYY-MM-DD')``.
* Variables persist within a statement and, as an extension of Cypher, **across statements**: a
  variable bound to one node at the end of a statement can be used bare — ``(Keanu)`` — later. A
  ``MATCH`` or labelled ``CREATE`` pattern of a name not yet bound in the current statement
  declares it afresh.
* ``MATCH`` of node patterns ``(a:Label {key: literal})``, optionally with
  ``WHERE a.key = literal AND ...``, followed by ``CREATE`` — with Cypher's row semantics (every
  combination of matches creates once; no match creates nothing).
* ``WITH a, b AS c`` / ``WITH *`` pass variables through.
* Read-only clauses after a statement's last ``CREATE`` (e.g. the movies script's trailing
  ``WITH ... MATCH ... RETURN``) change no data and are ignored; so are ``CREATE/DROP INDEX``
  and ``CREATE/DROP CONSTRAINT`` statements.

Node ids: a node's own ``id`` property (as a string) if it has one, else ``"<Label>:<n>"`` (n
counts that label's id-less nodes from 1). Multi-label nodes ``(:A:B)``: the embedded engine has
one label per node, so the node gets the first label and the others are kept, in order, in a
``labels`` STRING[] property (``MATCH (x:B)`` still finds it while importing). Labels, types and
property keys that are not identifiers (backticked ``` `My Label` ```) are sanitised
(``My_Label``).

Everything else — ``MERGE``, ``SET``, ``DELETE``, ``REMOVE``, ``UNWIND``, ``FOREACH``, ``CALL``,
``LOAD CSV``, ``OPTIONAL MATCH``, ``UNION``, parameters, non-literal expressions, undirected or
variable-length relationships, unknown variables — is an :class:`ImportFormatError` naming the
script line.

Input rules, checked so that bad input is refused quickly and with its line:

* Limits, enforced by the statement splitter in one linear pass *before* anything is parsed
  (the parser needs ~3 s and ~120 MB per MiB of patterns): a string literal or backticked name
  of at most ``MAX_LITERAL_CHARS`` (1 MiB), a comment of at most ``MAX_COMMENT_CHARS`` (1 MiB),
  a statement of at most ``MAX_STATEMENT_CHARS`` (2 MiB), ``( [ {`` nested at most
  ``MAX_NESTING`` (32) deep. An unterminated string, backticked name or ``/*`` comment is
  refused with the line where it opens.
* Literal values must fit: integers INT64 (-2**63 .. 2**63-1, ``-9223372036854775808``
  included), floats finite (``1e400`` is refused, not stored as ``inf``), strings valid Unicode
  (``\\uD83D\\uDE00`` is one character; a lone surrogate escape or one beyond U+10FFFF is
  refused).
* Names: a label, type or property key starting with ``_`` — ``{_id: 1}`` — is refused: such
  keys are reserved for internal keys (the query layer drops them from results; before this
  rule ``_id`` was silently sanitised into the node id). Labels and relationship types share the
  graph engine's case-insensitive namespace, and so do the properties of one label or type:
  ``(:Person)`` and ``(:person)``, a label ``Knows`` and a type ``KNOWS``, properties ``name``
  and ``Name`` of one label, or a node property ``ID`` beside the node key are errors naming
  both names, on the line where the second one appears. ``from`` / ``to`` are ordinary
  relationship properties. An ``id`` property must not be empty.
* A script without statements (empty, only whitespace/comments) or that creates no node is an
  error (``... is empty``).
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cypherast import ast as a
from cypherast.dialects import get_dialect
from cypherast.errors import CypherastError
from cypherast.parser import Parser

from components.graph.errors import GraphError, ImportFormatError
from components.graph.model import CatalogNames, GraphData
from components.graph.sources._common import check_graph, sanitize_identifier, value_problem

__all__ = [
    "MAX_COMMENT_CHARS",
    "MAX_LITERAL_CHARS",
    "MAX_NESTING",
    "MAX_STATEMENT_CHARS",
    "Statement",
    "read_cypher_script",
    "split_statements",
]


# ---------------------------------------------------------------------------------------------
# splitting
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    """One ``;``-separated statement and the script line its text starts on (the line of the
    preceding ``;``)."""

    text: str
    line: int


MAX_LITERAL_CHARS = 1 << 20
"""Longest string literal or backticked name (1 MiB characters)."""
MAX_COMMENT_CHARS = 1 << 20
"""Longest comment (1 MiB characters)."""
MAX_STATEMENT_CHARS = 1 << 21
"""Longest statement (2 MiB characters; parsing costs ~3 s and ~120 MB per MiB of patterns)."""
MAX_NESTING = 32
"""Deepest nesting of ``( [ {`` in a statement."""

_SPECIAL = re.compile(r"""['"`;()\[\]{}]|//|/\*""")
_STRING_END = {"'": re.compile(r"[\\']"), '"': re.compile(r'[\\"]')}
_ESCAPE = re.compile(
    r"\\(?:u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.))",
    re.S,
)
_REESCAPE = {"\\": "\\\\", "'": "\\'", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _decode_unicode_escapes(literal: str) -> str:
    """Replace ``\\uXXXX`` escapes inside a string literal by the character (cypherast 0.1.12
    decodes them as ``uXXXX``); other escapes are left for the parser. A surrogate pair
    ``\\uD83D\\uDE00`` is one character; a lone surrogate or a code point beyond U+10FFFF is a
    ``ValueError``."""

    def repl(m: re.Match[str]) -> str:
        if m.group(1):
            high, low = int(m.group(1), 16), int(m.group(2), 16)
            ch = chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            return ch
        esc = m.group(3)
        if esc[0] in "uU" and len(esc) > 1:
            code = int(esc[1:], 16)
            if 0xD800 <= code <= 0xDFFF:
                raise ValueError(f"\\{esc} is a lone surrogate (not a character)")
            if code > 0x10FFFF:
                raise ValueError(f"\\{esc} is beyond U+10FFFF (not a character)")
            ch = chr(code)
            return _REESCAPE.get(ch, ch)
        return m.group(0)

    if "\\" not in literal:
        return literal
    return _ESCAPE.sub(repl, literal)


class _Lines:
    """Line numbers of increasing positions in ``text``, in linear total time."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1

    def at(self, pos: int) -> int:
        if pos < self.pos:  # rare (error messages about an earlier point): count from the start
            return self.text.count("\n", 0, pos) + 1
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n} characters"


def split_statements(script: str, path: str | None = None) -> list[Statement]:
    """Split at top-level ``;``; drop statements that hold only whitespace and comments.

    Comments are blanked (their newlines kept), so line ``k`` of a statement's ``text`` is script
    line ``line + k - 1``. One linear pass, which also enforces the input limits
    (``MAX_LITERAL_CHARS``, ``MAX_COMMENT_CHARS``, ``MAX_STATEMENT_CHARS``, ``MAX_NESTING``) and
    refuses unterminated strings, backticked names and ``/*`` comments — each an
    :class:`ImportFormatError` naming ``path`` and the line.

    >>> [(s.line, s.text) for s in split_statements("CREATE (:A {n: ';'}); // c\\nCREATE (:B);")]
    [(1, "CREATE (:A {n: ';'})"), (1, '  \\nCREATE (:B)')]
    """
    out: list[Statement] = []
    parts: list[str] = []
    lines = _Lines(script)
    n = len(script)
    stmt_start, stmt_line, depth, has_code = 0, 1, 0, False

    def fail(message: str, pos: int) -> ImportFormatError:
        return ImportFormatError(message, path=path, line=lines.at(pos))

    def flush(end: int) -> None:
        nonlocal has_code
        if end - stmt_start > MAX_STATEMENT_CHARS:
            raise fail(f"statement longer than {_size(MAX_STATEMENT_CHARS)} (split it at ';')", stmt_start)
        if has_code:
            out.append(Statement("".join(parts), stmt_line))
        parts.clear()
        has_code = False

    pos = 0
    while True:
        m = _SPECIAL.search(script, pos)
        start = m.start() if m else n
        if start - stmt_start > MAX_STATEMENT_CHARS:
            raise fail(f"statement longer than {_size(MAX_STATEMENT_CHARS)} (split it at ';')", stmt_start)
        gap = script[pos:start]
        if gap:
            parts.append(gap)
            has_code = has_code or not gap.isspace()
        if m is None:
            break
        tok = m.group()
        if tok == ";":
            flush(start)
            stmt_start, stmt_line, depth = m.end(), lines.at(start), 0
            pos = m.end()
        elif tok in "([{":
            depth += 1
            if depth > MAX_NESTING:
                raise fail(f"brackets nested more than {MAX_NESTING} levels deep", start)
            parts.append(tok)
            has_code, pos = True, m.end()
        elif tok in ")]}":
            depth = max(depth - 1, 0)
            parts.append(tok)
            has_code, pos = True, m.end()
        elif tok in ("'", '"'):
            pos = _string_end(script, start, tok, fail)
            try:
                parts.append(_decode_unicode_escapes(script[start:pos]))
            except ValueError as exc:
                raise fail(f"string literal: {exc}", start) from None
            has_code = True
        elif tok == "`":
            pos = _backtick_end(script, start, fail)
            parts.append(script[start:pos])
            has_code = True
        else:  # comment: a space, plus its newlines so parser line numbers stay right
            pos = _comment_end(script, start, tok, fail)
            parts.append(" " + "\n" * script.count("\n", start, pos))
    flush(n)
    return out


def _string_end(script: str, start: int, quote: str, fail: Callable[[str, int], Exception]) -> int:
    """End (exclusive) of the string literal opening at ``start``."""
    limit = min(len(script), start + MAX_LITERAL_CHARS + 2)
    i = start + 1
    pattern = _STRING_END[quote]
    while True:
        m = pattern.search(script, i, limit)
        if m is None:
            if limit < len(script):
                raise fail(f"string literal longer than {_size(MAX_LITERAL_CHARS)}", start)
            raise fail("Unterminated string literal (opened here)", start)
        if m.group() == quote:
            return m.end()
        i = m.end() + 1  # skip the escaped character


def _backtick_end(script: str, start: int, fail: Callable[[str, int], Exception]) -> int:
    limit = min(len(script), start + MAX_LITERAL_CHARS + 2)
    i = start + 1
    while True:
        j = script.find("`", i, limit)
        if j < 0:
            if limit < len(script):
                raise fail(f"backticked name longer than {_size(MAX_LITERAL_CHARS)}", start)
            raise fail("Unterminated backticked name (opened here)", start)
        if script.startswith("``", j):  # `` is an escaped backtick
            i = j + 2
            continue
        return j + 1


def _comment_end(script: str, start: int, tok: str, fail: Callable[[str, int], Exception]) -> int:
    limit = min(len(script), start + MAX_COMMENT_CHARS + 2)
    if tok == "//":
        j = script.find("\n", start, limit)
        if j >= 0:
            return j
        if limit < len(script):
            raise fail(f"comment longer than {_size(MAX_COMMENT_CHARS)}", start)
        return limit
    j = script.find("*/", start + 2, limit)
    if j >= 0:
        return j + 2
    if limit < len(script) and script.find("*/", limit - 1) >= 0:
        raise fail(f"comment longer than {_size(MAX_COMMENT_CHARS)}", start)
    raise fail("Unterminated /* comment (opened here, never closed with */)", start)


_SCHEMA_STATEMENT = re.compile(
    r"\s*(CREATE|DROP)\s+(OR\s+REPLACE\s+)?((TEXT|RANGE|POINT|FULLTEXT|VECTOR|LOOKUP|BTREE)\s+)?"
    r"(INDEX|CONSTRAINT)\b",
    re.I,
)


# ---------------------------------------------------------------------------------------------
# parsing with line numbers
# ---------------------------------------------------------------------------------------------


class _LineParser(Parser):
    """cypherast's parser, stamping each clause / pattern / expression node with ``_line``
    (the line of its first token) so interpretation errors can name the script line."""


def _stamped(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(self: Parser, *args: Any, **kwargs: Any) -> Any:
        line = self._peek().position.line
        node = method(self, *args, **kwargs)
        if isinstance(node, a.AstNode) and getattr(node, "_line", None) is None:
            node._line = line
        return node

    return wrapper


for _name in (
    "parse_match",
    "parse_create",
    "parse_merge",
    "parse_set",
    "parse_delete",
    "parse_remove",
    "parse_with",
    "parse_return",
    "parse_unwind",
    "parse_foreach",
    "parse_call",
    "parse_load_csv",
    "parse_path_pattern",
    "parse_node_pattern",
    "parse_relationship_pattern",
    "parse_map_literal",
    "parse_expression",
    "parse_primary",
):
    setattr(_LineParser, _name, _stamped(getattr(Parser, _name)))

_DIALECT = get_dialect(None).name
_POSITION_PREFIX = re.compile(r"^\[CG\d+\]\s*(line \d+:\d+\s*)?")


def _parse(stmt: Statement, where: str) -> a.AstNode:
    try:
        return _LineParser(stmt.text, dialect=_DIALECT).parse()
    except CypherastError as exc:
        position = getattr(exc, "position", None)
        rel = position.line if position is not None else 1
        message = _POSITION_PREFIX.sub("", (str(exc).splitlines() or [type(exc).__name__])[0])
        line = stmt.line + rel - 1
        raise ImportFormatError(f"syntax error: {message}", path=where, line=line) from None
    except (RecursionError, MemoryError):
        raise ImportFormatError(
            "statement too complex to parse (nested too deeply)", path=where, line=stmt.line
        ) from None
    except Exception as exc:  # the third-party parser failing on odd input: still the input's fault
        raise ImportFormatError(
            f"syntax error: the parser could not read this statement ({type(exc).__name__})",
            path=where,
            line=stmt.line,
        ) from None


# ---------------------------------------------------------------------------------------------
# literal values
# ---------------------------------------------------------------------------------------------


class _Fail(Exception):
    """An interpretation error at an AST node (converted to ImportFormatError with its line)."""

    def __init__(self, message: str, node: a.AstNode | None = None) -> None:
        super().__init__(message)
        self.node = node


def _literal(expr: a.AstNode) -> Any:
    if isinstance(expr, a.Null):
        return None
    if isinstance(expr, (a.Boolean, a.Integer, a.Float, a.String)):
        return _checked(expr.this, expr)
    if isinstance(expr, a.Neg) and isinstance(expr.this, (a.Integer, a.Float)):
        return _checked(-expr.this.this, expr)
    if isinstance(expr, a.List):
        return _list_literal([_literal(e) for e in expr.expressions], expr)
    if isinstance(expr, a.FunctionCall) and str(expr.name).lower() == "date":
        return _date_literal(expr)
    if isinstance(expr, a.Parameter):
        raise _Fail(f"parameter ${expr.name} is not supported: the script must use literal values", expr)
    if isinstance(expr, a.Map):
        raise _Fail("a map is not a property value", expr)
    raise _Fail(f"only literal values are supported, found {type(expr).__name__}", expr)


def _checked(value: Any, node: a.AstNode) -> Any:
    """Integers must fit INT64, floats be finite, strings valid Unicode (nothing is widened)."""
    problem = value_problem(value)
    if problem:
        raise _Fail(problem, node)
    return value


def _list_literal(values: list[Any], node: a.AstNode) -> list[Any]:
    kinds = {"bool" if isinstance(v, bool) else type(v).__name__ for v in values}
    if kinds <= {"int", "float"} and "float" in kinds:
        return [float(v) for v in values]
    if len(kinds) <= 1 and kinds <= {"str", "bool", "int", "float"}:
        return values
    raise _Fail("a list property must hold non-null scalars of one kind", node)


def _date_literal(expr: a.FunctionCall) -> _dt.date:
    args = expr.expressions or []
    if len(args) == 1 and isinstance(args[0], a.String):
        try:
            return _dt.date.fromisoformat(args[0].this)
        except ValueError:
            pass
    raise _Fail("date() needs one 'YYYY-MM-DD' string literal", expr)


def _property_map(node: a.Map | None) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for key, expr in node.entries if node is not None else []:
        name = _ident(key, "property name", node)
        if name in props:
            raise _Fail(f"property {name!r} given twice", node)
        props[name] = _literal(expr)
    return props


def _ident(name: str, what: str, node: a.AstNode | None) -> str:
    try:
        return sanitize_identifier(name, what)
    except GraphError as exc:
        raise _Fail(exc.message, node) from None


def _labels(np_: a.NodePattern) -> tuple[str, ...]:
    expr = np_.labels
    if expr is None:
        return ()
    if expr.expression is not None:
        raise _Fail("label expressions (|, &, !) are not supported", np_)
    return tuple(_ident(label, "label", np_) for label in expr.labels)


# ---------------------------------------------------------------------------------------------
# interpretation
# ---------------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Node:
    labels: tuple[str, ...]
    id: str
    props: dict[str, Any]

    @property
    def label(self) -> str:
        return self.labels[0]


class _RelVar:
    """Marks a variable bound to a relationship (usable only as a relationship)."""


_REL = _RelVar()
Row = dict[str, Any]  # variable -> _Node | _RelVar


def _key(value: Any) -> Any:
    """Hashable equality key with Cypher's equality: 1 = 1.0, but true <> 1."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("num", value)
    if isinstance(value, list):
        return ("list", tuple(_key(v) for v in value))
    return (type(value).__name__, value)


@dataclass
class _Store:
    """Nodes created so far, with lookups by label and by (label, property) value."""

    nodes: list[_Node] = field(default_factory=list)
    by_label: dict[str, list[_Node]] = field(default_factory=dict)
    ids: dict[str, set[str]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    names: CatalogNames = field(default_factory=CatalogNames)
    _index: dict[tuple[str, str], dict[Any, list[_Node]]] = field(default_factory=dict)

    def create(self, labels: tuple[str, ...], props: dict[str, Any], node: a.AstNode) -> _Node:
        label = labels[0]
        if len(labels) > 1 and "labels" in props:
            raise _Fail("a node with several labels cannot also have a 'labels' property", node)
        columns = [k for k in props if k != "id"] + (["labels"] if len(labels) > 1 else [])
        _register(self.names, label, "label", columns, node)
        node_id = self._node_id(label, props, node)
        created = _Node(labels, node_id, props)
        self.nodes.append(created)
        for lbl in dict.fromkeys(labels):
            self.by_label.setdefault(lbl, []).append(created)
            for (ilabel, key), idx in self._index.items():
                if ilabel == lbl and props.get(key) is not None:
                    idx.setdefault(_key(props[key]), []).append(created)
        return created

    def _node_id(self, label: str, props: dict[str, Any], node: a.AstNode) -> str:
        seen = self.ids.setdefault(label, set())
        if props.get("id") is not None:
            if isinstance(props["id"], list):
                raise _Fail("an 'id' property must be a scalar", node)
            node_id = str(props["id"])
            if node_id == "":
                raise _Fail("an 'id' property must not be empty", node)
        else:
            self.counters[label] = self.counters.get(label, 0) + 1
            node_id = f"{label}:{self.counters[label]}"
        if node_id in seen:
            raise _Fail(f"duplicate {label} id {node_id!r}", node)
        seen.add(node_id)
        return node_id

    def find(self, labels: tuple[str, ...], props: dict[str, Any]) -> list[_Node]:
        if any(v is None for v in props.values()):
            return []  # `{k: null}` never matches
        if labels and props:
            key, value = next(iter(props.items()))
            candidates = self._lookup(labels[0], key).get(_key(value), [])
        elif labels:
            candidates = self.by_label.get(labels[0], [])
        else:
            candidates = self.nodes
        return [n for n in candidates if _matches(n, labels, props)]

    def _lookup(self, label: str, key: str) -> dict[Any, list[_Node]]:
        idx = self._index.get((label, key))
        if idx is None:
            idx = self._index[(label, key)] = {}
            for n in self.by_label.get(label, []):
                if n.props.get(key) is not None:
                    idx.setdefault(_key(n.props[key]), []).append(n)
        return idx


def _register(names: CatalogNames, table: str, kind: str, columns: Iterable[str], node: a.AstNode) -> None:
    try:
        names.table(table, kind)
        for column in columns:
            names.column(table, column)
    except ImportFormatError as exc:
        raise _Fail(exc.message, node) from None


def _matches(node: _Node, labels: Iterable[str], props: dict[str, Any]) -> bool:
    return all(lbl in node.labels for lbl in labels) and all(
        node.props.get(k) is not None and _key(node.props[k]) == _key(v) for k, v in props.items()
    )


_WRITES = (
    a.Create,
    a.Merge,
    a.Set,
    a.Delete,
    a.Remove,
    a.Foreach,
    a.CallProcedure,
    a.CallSubquery,
    a.LoadCsv,
    a.Insert,
)


class _Interpreter:
    """Runs statements one by one against a :class:`_Store`; ``globals`` carries variables
    bound to a single node from one statement to the next."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.store = _Store()
        self.graph = GraphData()
        self.globals: dict[str, _Node] = {}

    # -- statements --------------------------------------------------------------------------

    def run(self, stmt: Statement) -> None:
        if _SCHEMA_STATEMENT.match(stmt.text):
            return
        tree = _parse(stmt, self.where)
        try:
            self._run_query(tree.this)
        except _Fail as exc:
            line = _line_of(exc.node)
            raise ImportFormatError(str(exc), path=self.where, line=stmt.line + line - 1) from None

    def _run_query(self, query: a.AstNode) -> None:
        if not isinstance(query, a.Query):
            raise _Fail(f"{type(query).__name__} statements are not supported", query)
        clauses = query.clauses
        last = max((i for i, c in enumerate(clauses) if isinstance(c, a.Create)), default=-1)
        self._check_read_only(clauses[last + 1 :])
        rows: list[Row] = [{}]
        for clause in clauses[: last + 1]:
            if isinstance(clause, a.Create):
                rows = [self._create(clause, row) for row in rows]
            elif isinstance(clause, a.Match):
                rows = self._match(clause, rows)
            elif isinstance(clause, a.With):
                rows = [self._with(clause, row) for row in rows]
            else:
                raise _Fail(f"{_clause_name(clause)} is not supported", clause)
        self._carry_over(rows)

    @staticmethod
    def _check_read_only(clauses: list[a.AstNode]) -> None:
        for clause in clauses:
            for node in clause.walk():
                if isinstance(node, _WRITES):
                    raise _Fail(f"{_clause_name(node)} is not supported", node)

    def _carry_over(self, rows: list[Row]) -> None:
        if not rows:
            return
        for var, value in rows[0].items():
            if isinstance(value, _Node) and all(row.get(var) is value for row in rows):
                self.globals[var] = value

    # -- MATCH -------------------------------------------------------------------------------

    def _match(self, clause: a.Match, rows: list[Row]) -> list[Row]:
        if clause.optional:
            raise _Fail("OPTIONAL MATCH is not supported", clause)
        filters = _where_filters(clause.where, clause)
        for path in clause.pattern.paths:
            if path.variable is not None or len(path.elements) != 1:
                raise _Fail("MATCH may only look up nodes, e.g. MATCH (a:Label {key: value})", path)
            np_ = path.elements[0]
            var = np_.variable.this if np_.variable is not None else None
            labels, props = _labels(np_), _property_map(np_.properties)
            if np_.where is not None:
                raise _Fail("inline WHERE in a pattern is not supported", np_)
            props.update(filters.pop(var, {}) if var else {})
            rows = [r for row in rows for r in self._match_node(np_, var, labels, props, row)]
        for var, props in filters.items():  # conditions on variables bound earlier
            rows = [row for row in rows if _matches(self._bound_node(var, row, clause), (), props)]
        return rows

    def _match_node(
        self,
        np_: a.NodePattern,
        var: str | None,
        labels: tuple[str, ...],
        props: dict[str, Any],
        row: Row,
    ) -> list[Row]:
        """The rows ``row`` extends to when ``np_`` (with ``labels``/``props``) is matched."""
        if var is not None and var in row:
            node = self._bound_node(var, row, np_)
            return [row] if _matches(node, labels, props) else []
        if var is not None and not labels and not np_.properties and var in self.globals:
            node = self.globals[var]
            return [{**row, var: node}] if _matches(node, (), props) else []
        if not labels and not props:
            raise _Fail(f"unknown variable {var!r}" if var else "MATCH () needs a label or properties", np_)
        found = self.store.find(labels, props)
        return [{**row, var: n} for n in found] if var else [dict(row) for _ in found]

    # -- CREATE ------------------------------------------------------------------------------

    def _create(self, clause: a.Create, row: Row) -> Row:
        row = dict(row)
        for path in clause.pattern.paths:
            elements = path.elements
            nodes: list[_Node] = []
            for i, element in enumerate(elements):
                if i % 2 == 0:
                    nodes.append(self._create_node(element, row))
            for i, rel in enumerate(elements[1::2]):
                self._create_rel(rel, nodes[i], nodes[i + 1], row)
        return row

    def _create_node(self, np_: a.NodePattern, row: Row) -> _Node:
        var = np_.variable.this if np_.variable is not None else None
        labels = _labels(np_)
        if var is not None and var in row:
            if labels or np_.properties is not None:
                raise _Fail(f"variable {var!r} is already bound and cannot be redeclared", np_)
            return self._bound_node(var, row, np_)
        if var is not None and not labels and np_.properties is None and var in self.globals:
            row[var] = self.globals[var]
            return row[var]
        if not labels:
            raise _Fail(f"unknown variable {var!r}" if var else "a created node needs a label", np_)
        props = {k: v for k, v in _property_map(np_.properties).items() if v is not None}
        node = self.store.create(labels, props, np_)
        if var is not None:
            row[var] = node
        return node

    def _create_rel(self, rp: a.RelationshipPattern, left: _Node, right: _Node, row: Row) -> None:
        types = rp.types or []
        if len(types) != 1:
            raise _Fail("a created relationship needs exactly one type", rp)
        if rp.variable_length or rp.min_hops is not None or rp.max_hops is not None:
            raise _Fail("variable-length relationships cannot be created", rp)
        if rp.direction is a.Direction.BOTH:
            raise _Fail("a created relationship needs a direction (-> or <-)", rp)
        if rp.variable is not None:
            if rp.variable.this in row:
                raise _Fail(f"variable {rp.variable.this!r} is already bound", rp)
            row[rp.variable.this] = _REL
        src, dst = (left, right) if rp.direction is a.Direction.OUTGOING else (right, left)
        props = {k: v for k, v in _property_map(rp.properties).items() if v is not None}
        rtype = _ident(types[0], "relationship type", rp)
        _register(self.store.names, rtype, "relationship type", props, rp)
        self.graph.add_rel(rtype, (src.label, src.id), (dst.label, dst.id), props)

    # -- WITH --------------------------------------------------------------------------------

    def _with(self, clause: a.With, row: Row) -> Row:
        if clause.distinct or clause.where or clause.order or clause.skip or clause.limit:
            raise _Fail("WITH may only pass variables through (no DISTINCT/WHERE/ORDER/SKIP/LIMIT)", clause)
        out: Row = {}
        for expr in clause.expressions:
            if isinstance(expr, a.Star):
                out.update(row)
            elif isinstance(expr, a.Identifier):
                out[expr.this] = self._bound(expr.this, row, clause)
            elif isinstance(expr, a.Alias) and isinstance(expr.this, a.Identifier):
                out[expr.alias.this] = self._bound(expr.this.this, row, clause)
            else:
                raise _Fail("WITH may only pass variables through (`a`, `a AS b`, `*`)", clause)
        return out

    # -- variables ---------------------------------------------------------------------------

    def _bound(self, var: str, row: Row, node: a.AstNode | None) -> Any:
        if var in row:
            return row[var]
        if var in self.globals:
            return self.globals[var]
        raise _Fail(f"unknown variable {var!r}", node)

    def _bound_node(self, var: str, row: Row, node: a.AstNode | None) -> _Node:
        value = self._bound(var, row, node)
        if not isinstance(value, _Node):
            raise _Fail(f"variable {var!r} is a relationship, not a node", node)
        return value

    # -- result ------------------------------------------------------------------------------

    def result(self) -> GraphData:
        nodes_first = GraphData()
        for node in self.store.nodes:
            props = dict(node.props)
            if len(node.labels) > 1:
                props["labels"] = list(node.labels[1:])
            nodes_first.add_node(node.label, node.id, props)
        nodes_first.rels = self.graph.rels
        return check_graph(nodes_first, self.where, "the script is empty: it creates no nodes")


def _line_of(node: a.AstNode | None) -> int:
    """Statement-relative line of ``node``: its own stamp, else its first stamped descendant."""
    for sub in node.walk() if node is not None else ():
        line = getattr(sub, "_line", None)
        if line is not None:
            return int(line)
    return 1


def _clause_name(node: a.AstNode) -> str:
    names = {
        a.Merge: "MERGE",
        a.Set: "SET",
        a.Delete: "DELETE",
        a.Remove: "REMOVE",
        a.Foreach: "FOREACH",
        a.CallProcedure: "CALL",
        a.CallSubquery: "CALL { }",
        a.LoadCsv: "LOAD CSV",
        a.Unwind: "UNWIND",
        a.Create: "CREATE",
        a.Return: "RETURN",
        a.Insert: "INSERT",
    }
    return names.get(type(node), type(node).__name__.upper())


def _where_filters(where: a.Where | None, clause: a.Match) -> dict[str, dict[str, Any]]:
    """``WHERE a.k = 1 AND b.j = 'x'`` -> ``{"a": {"k": 1}, "b": {"j": "x"}}``."""
    filters: dict[str, dict[str, Any]] = {}
    if where is None:
        return filters
    todo = [where.this]
    while todo:
        expr = todo.pop()
        if isinstance(expr, a.And):
            todo += [expr.expression, expr.this]
            continue
        sides = (expr.this, expr.expression) if isinstance(expr, a.EQ) else ()
        prop = next(
            (s for s in sides if isinstance(s, a.Property) and isinstance(s.this, a.Identifier)),
            None,
        )
        if prop is None:
            raise _Fail("WHERE supports only `var.key = literal` conditions joined by AND", expr)
        other = sides[1] if prop is sides[0] else sides[0]
        key = _ident(prop.name, "property name", clause)
        filters.setdefault(prop.this.this, {})[key] = _literal(other)
    return filters


def read_cypher_script(path: str | Path) -> GraphData:
    """Read a Cypher CREATE script file (see the module docstring for what it may contain)."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ImportFormatError("no such file", path=where) from None
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"not UTF-8 text: {exc.reason}", path=where) from None
    except OSError as exc:
        raise ImportFormatError(f"cannot read the file: {exc.strerror or exc}", path=where) from None
    statements = split_statements(text, where)
    if not statements:
        raise ImportFormatError("the script is empty: no statements, only whitespace and comments", path=where)
    interpreter = _Interpreter(where)
    for stmt in statements:
        interpreter.run(stmt)
    return interpreter.result()
