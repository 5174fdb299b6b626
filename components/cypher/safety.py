"""Static refusal of everything that is not a pure read.

Two independent layers, both must pass:

1. **Lexical** (:func:`scan_tokens`): the lexer's tokens — so the scan is case-insensitive and
   blind to comments and string literals (``RETURN 'CREATE'`` passes) — are searched for write,
   procedure, file, DDL, database and transaction keywords. It runs *before* parsing, so a
   statement the parser cannot read (Ladybug's ``LOAD FROM``, ``COPY``, ``ATTACH`` …) is still
   refused by name. A keyword in a *name* position (``n.set``, ``(:Create)``, ``{delete: 1}``,
   ``AS load``, a backtick-quoted name) is a name, not a clause.
2. **Syntactic** (:func:`check_tree`): every AST node must be of a whitelisted type
   (MATCH, WHERE, WITH, RETURN, UNWIND, ORDER BY, SKIP, LIMIT, UNION, patterns, expressions);
   anything else is refused by name. Namespaced functions (``apoc.*``, ``db.*``) and engine
   functions with side effects or file access are refused too.

Anything that does not parse is refused: :func:`check_read_only` never lets a query "fall
through" to the engine. Write/file/procedure refusals are :class:`UnsafeQueryError`; read-only
constructs outside the supported subset (GQL ``LET``/``FILTER``/``FOR``, quantified path
patterns …) are :class:`DialectError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from cypherast import ast as a
from cypherast.lexer import Token, TokenKind

from components.cypher.parse import ParsedQuery, iter_nodes, parse_query, tokenize
from components.graph.errors import DialectError, GraphError, UnsafeQueryError

__all__ = [
    "ALLOWED_NODE_TYPES",
    "REFUSED_FUNCTIONS",
    "check_read_only",
    "check_tree",
    "scan_tokens",
]

_READ_ONLY = "queries are read-only"

# --------------------------------------------------------------------------------------------
# Layer 1: tokens
# --------------------------------------------------------------------------------------------

#: Keyword tokens that start a write, procedure or graph-selection clause wherever they appear.
_KEYWORD_REFUSALS: Final[dict[TokenKind, str]] = {
    TokenKind.CREATE: f"write clause CREATE is not allowed: {_READ_ONLY}",
    TokenKind.MERGE: f"write clause MERGE is not allowed: {_READ_ONLY}",
    TokenKind.SET: f"write clause SET is not allowed: {_READ_ONLY}",
    TokenKind.DELETE: f"write clause DELETE is not allowed: {_READ_ONLY}",
    TokenKind.REMOVE: f"write clause REMOVE is not allowed: {_READ_ONLY}",
    TokenKind.FOREACH: f"write clause FOREACH is not allowed: {_READ_ONLY}",
    TokenKind.INSERT: f"write clause INSERT is not allowed: {_READ_ONLY}",
    TokenKind.CALL: "CALL is not allowed: procedure calls (APOC, db.*, engine functions) and "
    "CALL { } subqueries are refused",
    TokenKind.USE: "USE is not allowed: a query runs against the one configured graph",
}


def _followed_by_word(*words: str) -> Callable[[Token], bool]:
    upper = frozenset(words)
    return lambda nxt: nxt.kind is TokenKind.IDENT and nxt.text.upper() in upper


def _clause_follower(nxt: Token) -> bool:
    """A clause word is followed by a name, a string, ``(``, ``{``, WITH or INDEX; a variable
    of the same name is followed by an operator or a keyword."""
    return nxt.kind in _CLAUSE_FOLLOWERS


_CLAUSE_FOLLOWERS: Final = frozenset(
    {
        TokenKind.IDENT,
        TokenKind.STRING,
        TokenKind.LPAREN,
        TokenKind.LBRACE,
        TokenKind.WITH,
        TokenKind.INDEX,
    }
)

#: Contextual words (plain identifiers to the lexer) that start a file, DDL, database or
#: transaction statement, with the follower that marks them as a clause and the message.
_WORD_REFUSALS: Final[dict[str, tuple[Callable[[Token], bool], str]]] = {
    "LOAD": (_clause_follower, "file access LOAD (CSV / FROM / EXTENSION) is not allowed"),
    "COPY": (_clause_follower, "file access COPY is not allowed"),
    "EXPORT": (_clause_follower, "EXPORT DATABASE is not allowed"),
    "IMPORT": (_clause_follower, "IMPORT DATABASE is not allowed"),
    "ATTACH": (_clause_follower, "ATTACH (database) is not allowed"),
    "INSTALL": (_clause_follower, "INSTALL (extension) is not allowed"),
    "UNINSTALL": (_clause_follower, "UNINSTALL (extension) is not allowed"),
    "DROP": (_clause_follower, "DDL DROP is not allowed"),
    "ALTER": (_clause_follower, "DDL ALTER is not allowed"),
    "TRUNCATE": (_clause_follower, "TRUNCATE is not allowed"),
    "SHOW": (_clause_follower, "SHOW (admin command) is not allowed"),
    "GRANT": (_clause_follower, "GRANT (admin command) is not allowed"),
    "REVOKE": (_clause_follower, "REVOKE (admin command) is not allowed"),
    "DENY": (_clause_follower, "DENY (admin command) is not allowed"),
    "TERMINATE": (_clause_follower, "TERMINATE (admin command) is not allowed"),
    "BEGIN": (_clause_follower, "transaction command BEGIN is not allowed"),
    "COMMIT": (_clause_follower, "transaction command COMMIT is not allowed"),
    "ROLLBACK": (_clause_follower, "transaction command ROLLBACK is not allowed"),
    "CHECKPOINT": (_clause_follower, "CHECKPOINT is not allowed"),
    "START": (_followed_by_word("TRANSACTION", "DATABASE"), "START TRANSACTION is not allowed"),
    "STOP": (_followed_by_word("DATABASE"), "STOP DATABASE is not allowed"),
}

#: Tokens after which a keyword is a name: property key, label/type, alias.
_NAME_AFTER: Final = frozenset({TokenKind.DOT, TokenKind.COLON, TokenKind.AS})
#: Tokens around ``|`` that make the keyword a relationship type name (``[:A|Set]``).
_TYPE_LIST_END: Final = frozenset(
    {
        TokenKind.RBRACKET,
        TokenKind.RPAREN,
        TokenKind.PIPE,
        TokenKind.STAR,
        TokenKind.LBRACE,
        TokenKind.COLON,
    }
)


def _is_name_position(tokens: tuple[Token, ...], i: int, source: str | None) -> bool:
    tok = tokens[i]
    if source is not None and source[tok.position.offset : tok.position.offset + 1] == "`":
        return True  # `CREATE` quoted: always a name
    prev = tokens[i - 1] if i > 0 else None
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    if prev is not None and prev.kind in _NAME_AFTER:
        return True
    if (
        nxt is not None
        and nxt.kind is TokenKind.COLON
        and prev is not None
        and prev.kind
        in (
            TokenKind.LBRACE,
            TokenKind.COMMA,
        )
    ):
        return True  # map key: {set: 1}
    return prev is not None and prev.kind is TokenKind.PIPE and nxt is not None and nxt.kind in _TYPE_LIST_END


def _where(tok: Token) -> str:
    return f" (line {tok.position.line}, column {tok.position.col})"


def scan_tokens(tokens: tuple[Token, ...], source: str | None = None) -> None:
    """Layer 1: refuse write/procedure/file/DDL/database/transaction keywords and ``;``-separated
    statements. ``source`` (the text the tokens came from) lets quoted names pass.

    Raises :class:`UnsafeQueryError` naming the first refused keyword and its position.
    """
    for i, tok in enumerate(tokens):
        kind = tok.kind
        if kind is TokenKind.SEMICOLON:
            if any(t.kind not in (TokenKind.SEMICOLON, TokenKind.EOF) for t in tokens[i + 1 :]):
                raise UnsafeQueryError("one statement per query: ';' separates statements")
            continue
        if kind is TokenKind.DETACH:
            if _is_name_position(tokens, i, source):
                continue
            nxt = tokens[i + 1] if i + 1 < len(tokens) else tok
            what = "write clause DETACH DELETE" if nxt.kind is TokenKind.DELETE else "DETACH"
            raise UnsafeQueryError(f"{what} is not allowed: {_READ_ONLY}{_where(tok)}")
        message = _KEYWORD_REFUSALS.get(kind)
        if message is not None:
            if not _is_name_position(tokens, i, source):
                raise UnsafeQueryError(message + _where(tok))
            continue
        if kind is TokenKind.IDENT:
            rule = _WORD_REFUSALS.get(tok.text.upper())
            if rule is None or _is_name_position(tokens, i, source):
                continue
            follows, message = rule
            nxt = tokens[i + 1] if i + 1 < len(tokens) else tok
            if i == 0 or follows(nxt):  # no Cypher clause starts with a plain name
                raise UnsafeQueryError(f"{message}: {_READ_ONLY}{_where(tok)}")


# --------------------------------------------------------------------------------------------
# Layer 2: the AST
# --------------------------------------------------------------------------------------------

#: Node types a read-only query may contain.
ALLOWED_NODE_TYPES: Final[frozenset[type[a.AstNode]]] = frozenset(
    {
        # statements and clauses
        a.Cypher,
        a.Query,
        a.Union,
        a.Match,
        a.Where,
        a.With,
        a.Return,
        a.Unwind,
        a.Order,
        a.Ordered,
        a.Skip,
        a.Limit,
        # patterns
        a.Pattern,
        a.PathPattern,
        a.NodePattern,
        a.RelationshipPattern,
        a.LabelExpression,
        a.ShortestPath,
        # atoms
        a.Null,
        a.Boolean,
        a.Integer,
        a.Float,
        a.String,
        a.Parameter,
        a.Identifier,
        a.Star,
        # expressions
        a.Property,
        a.LabelPredicate,
        a.Map,
        a.List,
        a.ListSubscript,
        a.ListSlice,
        a.Alias,
        a.Add,
        a.Sub,
        a.Mul,
        a.Div,
        a.Mod,
        a.Pow,
        a.EQ,
        a.NEQ,
        a.LT,
        a.LTE,
        a.GT,
        a.GTE,
        a.And,
        a.Or,
        a.Xor,
        a.In,
        a.StartsWith,
        a.EndsWith,
        a.Contains,
        a.RegexMatch,
        a.Not,
        a.Neg,
        a.IsNull,
        a.FunctionCall,
        a.Case,
        a.Coalesce,
        a.ListComprehension,
        a.Quantifier,
        a.ListLambda,
        a.PatternComprehension,
        a.MapProjection,
        a.PropertySelector,
        a.PatternPredicate,
        a.CountSubquery,
    }
)


def _write(name: str) -> Callable[[a.AstNode], GraphError]:
    return lambda _node: UnsafeQueryError(f"write clause {name} is not allowed: {_READ_ONLY}")


def _delete(node: a.AstNode) -> GraphError:
    name = "DETACH DELETE" if node.detach else "DELETE"
    return UnsafeQueryError(f"write clause {name} is not allowed: {_READ_ONLY}")


def _procedure(node: a.AstNode) -> GraphError:
    return UnsafeQueryError(
        f"procedure call CALL {node.name}() is not allowed: {_READ_ONLY} and procedures "
        "(APOC, db.*, engine table functions) are refused"
    )


def _unsupported(what: str) -> Callable[[a.AstNode], GraphError]:
    return lambda _node: DialectError(f"{what} is not supported by the read-only query path")


#: Refused node types with a specific message (anything else outside the whitelist is refused
#: generically, by its class name).
_NODE_REFUSALS: Final[dict[type[a.AstNode], Callable[[a.AstNode], GraphError]]] = {
    a.Create: _write("CREATE"),
    a.Merge: _write("MERGE"),
    a.OnCreate: _write("MERGE … ON CREATE SET"),
    a.OnMatch: _write("MERGE … ON MATCH SET"),
    a.Set: _write("SET"),
    a.SetItem: _write("SET"),
    a.Delete: _delete,
    a.Remove: _write("REMOVE"),
    a.RemoveLabels: _write("REMOVE"),
    a.Foreach: _write("FOREACH"),
    a.Insert: _write("INSERT"),
    a.CallProcedure: _procedure,
    a.Yield: _procedure,
    a.CallSubquery: lambda _n: UnsafeQueryError(
        "CALL { } subqueries are not allowed (they may write, and Ladybug has none)"
    ),
    a.LoadCsv: lambda _n: UnsafeQueryError(f"file access LOAD CSV is not allowed: {_READ_ONLY}"),
    a.AdminStatement: lambda n: UnsafeQueryError(
        f"schema/admin command {' '.join(str(n.text).split()[:2])} is not allowed: {_READ_ONLY}"
    ),
    a.Use: lambda _n: UnsafeQueryError("USE is not allowed: a query runs against one graph"),
    a.SessionCommand: lambda _n: UnsafeQueryError("session commands are not allowed"),
    a.TransactionCommand: lambda _n: UnsafeQueryError("transaction commands are not allowed"),
    a.CreateGraphType: _write("CREATE GRAPH TYPE"),
    a.QuantifiedPath: _unsupported("a quantified path pattern ((…)){m,n}; use -[:T*m..n]->"),
    a.Let: _unsupported("LET"),
    a.Filter: _unsupported("FILTER"),
    a.FilterItem: _unsupported("FILTER"),
    a.For: _unsupported("FOR … IN (use UNWIND)"),
    a.GroupBy: _unsupported("GROUP BY (grouping is implicit in RETURN/WITH)"),
    a.Search: _unsupported("SEARCH (vector index)"),
    a.WhenQuery: _unsupported("WHEN … THEN { } conditional queries"),
    a.WhenBranch: _unsupported("WHEN … THEN { } conditional queries"),
    a.Next: _unsupported("NEXT (GQL query chaining)"),
    a.RelationshipLambda: _unsupported("Memgraph relationship lambdas"),
}

#: Functions refused by (lower-case) name: side effects, session state, files, catalog access.
REFUSED_FUNCTIONS: Final[frozenset[str]] = frozenset(
    {
        "nextval",
        "currval",
        "setseed",
        "_cache_array_column_locally",
        "file",
        "linenumber",
        "read_csv",
        "read_parquet",
        "read_json",
        "read_npy",
        "read_pandas",
        "read_csv_parallel",
        "read_csv_serial",
        "copy_csv",
        "copy_parquet",
        "project_graph",
        "project_graph_cypher",
        "drop_projected_graph",
        "current_setting",
        "table_info",
        "show_tables",
        "show_connection",
        "show_functions",
        "file_info",
        "disk_info",
        "storage_info",
        "stats_info",
        "bm_info",
        "fsm_info",
        "clear_warnings",
    }
)


def _check_function(node: a.FunctionCall) -> None:
    name = str(node.name)
    if not _NAME.fullmatch(name.replace(".", "_")):
        raise UnsafeQueryError(f"invalid function name {name!r}")
    if "." in name:
        raise UnsafeQueryError(
            f"namespaced function {name}() is not allowed: plugin functions (apoc.*, db.*, gds.* …) are refused"
        )
    if name.lower() in REFUSED_FUNCTIONS:
        raise UnsafeQueryError(f"function {name}() is not allowed: {_READ_ONLY}")


_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LABEL_EXPRESSION: Final = re.compile(r"[A-Za-z0-9_|&!%()]+")


def _check_label_expression(node: a.LabelExpression) -> None:
    if node.expression is not None and not _LABEL_EXPRESSION.fullmatch(str(node.expression)):
        raise DialectError(f"label expression {node.expression!r} is not supported: use plain label names")


def check_tree(tree: a.AstNode) -> None:
    """Layer 2: every node must be whitelisted; raises :class:`UnsafeQueryError` (writes, files,
    procedures, admin) or :class:`DialectError` (unsupported read-only syntax) naming it."""
    for node in iter_nodes(tree):
        typ = type(node)
        if typ in ALLOWED_NODE_TYPES:
            if typ is a.FunctionCall:
                _check_function(node)
            elif typ is a.LabelExpression:
                _check_label_expression(node)
            elif typ is a.RelationshipPattern and node.memgraph_quantifier is not None:
                raise DialectError("Memgraph path quantifiers (*bfs, *wShortest) are not supported")
            continue
        refusal = _NODE_REFUSALS.get(typ)
        if refusal is not None:
            raise refusal(node)
        raise UnsafeQueryError(f"{typ.__name__} is not allowed in a read-only query")


# --------------------------------------------------------------------------------------------
# Both layers
# --------------------------------------------------------------------------------------------


def check_read_only(query: str | ParsedQuery) -> ParsedQuery:
    """Refuse anything that is not one parseable, pure read; return the parsed query.

    Order: tokens (refuses unsafe statements even when they do not parse), then the parser
    (anything unparseable is refused as :class:`QuerySyntaxError`), then the AST whitelist.
    """
    if isinstance(query, ParsedQuery):
        scan_tokens(query.tokens, query.source)
        check_tree(query.tree)
        return query
    parsed = _VETTED.get(query) if isinstance(query, str) else None
    if parsed is not None:
        return parsed
    scan_tokens(tokenize(query), query)
    parsed = parse_query(query)
    check_tree(parsed.tree)
    if len(_VETTED) >= _VETTED_MAX:
        _VETTED.pop(next(iter(_VETTED)))
    _VETTED[query] = parsed  # the verdict is a pure function of the text; refusals are not kept
    return parsed


_VETTED: dict[str, ParsedQuery] = {}
_VETTED_MAX: Final = 8192
