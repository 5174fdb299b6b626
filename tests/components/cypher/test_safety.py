"""The static read-only guard: every write, procedure, file, DDL, database and transaction form is
refused (both layers, independently), while reads — including keywords inside strings, comments
and names — pass."""

from __future__ import annotations

import pytest

from components.cypher.parse import parse_query, tokenize
from components.cypher.safety import check_read_only, check_tree, scan_tokens
from components.graph.errors import (
    DialectError,
    GraphError,
    QuerySyntaxError,
    UnsafeQueryError,
)

# (query, words the refusal message must contain)
UNSAFE: list[tuple[str, str]] = [
    ("CREATE (n:Person {name: 'x'})", "CREATE"),
    ("MATCH (a), (b) CREATE (a)-[:KNOWS]->(b)", "CREATE"),
    ("MERGE (n:Person {id: 'p9'})", "MERGE"),
    ("MERGE (n:Person {id: 'p9'}) ON CREATE SET n.age = 1", "MERGE"),
    ("MATCH (n) SET n.age = 1 RETURN n", "SET"),
    ("MATCH (n) SET n += {age: 1}", "SET"),
    ("MATCH (n) SET n:Admin", "SET"),
    ("MATCH (n) DELETE n", "DELETE"),
    ("MATCH (n) DETACH DELETE n", "DETACH DELETE"),
    ("MATCH (n) REMOVE n.age", "REMOVE"),
    ("MATCH (n) REMOVE n:Person", "REMOVE"),
    ("MATCH (n) FOREACH (x IN [1] | CREATE (:T))", "FOREACH"),
    ("CALL db.labels()", "CALL"),
    ("CALL db.labels() YIELD label RETURN label", "CALL"),
    ("CALL apoc.load.json('file:///etc/passwd') YIELD value RETURN value", "CALL"),
    ("CALL show_tables() RETURN *", "CALL"),
    ("CALL table_info('Person') RETURN *", "CALL"),
    ("CALL { MATCH (n) RETURN n } RETURN n", "CALL"),
    ("MATCH (n) CALL { WITH n RETURN n.name AS x } RETURN x", "CALL"),
    ("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS", "CALL"),
    ("LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row", "LOAD"),
    ("LOAD CSV WITH HEADERS FROM 'https://x/y.csv' AS row RETURN row", "LOAD"),
    ("LOAD FROM '/etc/passwd' (file_format='csv', header=false) RETURN *", "LOAD"),
    ("LOAD WITH HEADERS (a STRING) FROM '/etc/passwd' RETURN *", "LOAD"),
    ("LOAD EXTENSION json", "LOAD"),
    ("LOAD json", "LOAD"),
    ("INSTALL json", "INSTALL"),
    ("UNINSTALL json", "UNINSTALL"),
    ("COPY Person FROM '/tmp/people.csv'", "COPY"),
    ("COPY (MATCH (n) RETURN n.name) TO '/tmp/out.csv'", "COPY"),
    ("ATTACH '/tmp/other.lbug' AS other (dbtype lbug)", "ATTACH"),
    ("DETACH other", "DETACH"),
    ("EXPORT DATABASE '/tmp/dump'", "EXPORT"),
    ("IMPORT DATABASE '/tmp/dump'", "IMPORT"),
    ("CREATE NODE TABLE T(id INT64, PRIMARY KEY(id))", "CREATE"),
    ("CREATE REL TABLE R(FROM Person TO Person)", "CREATE"),
    ("DROP TABLE Person", "DROP"),
    ("ALTER TABLE Person ADD x INT64", "ALTER"),
    ("CREATE INDEX person_name FOR (n:Person) ON (n.name)", "CREATE"),
    ("CREATE CONSTRAINT FOR (n:Person) REQUIRE n.id IS UNIQUE", "CREATE"),
    ("DROP INDEX person_name", "DROP"),
    ("SHOW INDEXES", "SHOW"),
    ("USE other MATCH (n) RETURN n", "USE"),
    ("BEGIN TRANSACTION", "BEGIN"),
    ("BEGIN", "BEGIN"),
    ("COMMIT", "COMMIT"),
    ("ROLLBACK", "ROLLBACK"),
    ("CHECKPOINT", "CHECKPOINT"),
    ("START TRANSACTION", "START"),
    ("MATCH (n) RETURN n; MATCH (m) DETACH DELETE m", "one statement"),
    ("RETURN 1; RETURN 2", "one statement"),
]


@pytest.mark.parametrize(("query", "word"), UNSAFE, ids=[q for q, _ in UNSAFE])
def test_unsafe_queries_are_refused(query: str, word: str) -> None:
    with pytest.raises(UnsafeQueryError) as info:
        check_read_only(query)
    assert word in str(info.value)


@pytest.mark.parametrize(
    "query",
    [
        "cReAtE (n)",
        "match (n) detach delete n",
        "MATCH (n) /* hidden */ DETACH /* x */ DELETE n",
        "MATCH (n) // comment\nDELETE n",
        "MATCH (n)\n\tSET\n\tn.x = 1",
        "load\nFROM '/etc/passwd' RETURN *",
        "Load /* c */ From '/etc/passwd' (file_format='csv') RETURN *",
        "call db.labels()",
        "RETURN CASE WHEN EXISTS { CREATE (n) } THEN 1 END",
        "MATCH (n) WHERE EXISTS { MATCH (n) SET n.x = 1 } RETURN n",
    ],
)
def test_case_comments_and_nesting_do_not_hide_writes(query: str) -> None:
    with pytest.raises(UnsafeQueryError):
        check_read_only(query)


@pytest.mark.parametrize(
    "query",
    [
        "RETURN 'CREATE'",
        'RETURN "DETACH DELETE n" AS s',
        "RETURN 'LOAD FROM \\'/etc/passwd\\'' AS s",
        "MATCH (n:Person) WHERE n.name = 'DROP TABLE Person' RETURN n.name",
        "MATCH (n) // CREATE (m) in a comment\nRETURN n.name",
        "MATCH (n) /* CALL db.labels() */ RETURN n.name",
        "MATCH (n:Set) WHERE n.delete = 1 RETURN n.create AS load",
        "RETURN {set: 1, remove: 2, call: 3} AS m",
        "MATCH (a)-[:CALL|Load]->(b) RETURN b",
        "MATCH (n) RETURN n.`CREATE`",
        "MATCH (`create`) RETURN `create`",
        "UNWIND [1, 2] AS load RETURN load",
        "MATCH (n) RETURN count(*) AS copy ORDER BY copy",
        "RETURN 1;",
        "RETURN 1 ;;",
        "MATCH (n:Person) WHERE n.age > $min RETURN n.name ORDER BY n.name SKIP 1 LIMIT 2",
        "MATCH (a)-[r:KNOWS*1..3]->(b) WHERE a.name STARTS WITH 'A' RETURN b.name, size(r)",
        "MATCH (a) OPTIONAL MATCH (a)-->(b) WITH a, count(b) AS n RETURN a.name, n",
        "MATCH (a) RETURN a.name UNION MATCH (b) RETURN b.name AS `a.name`",
        "MATCH (a) WHERE EXISTS { MATCH (a)-[:KNOWS]->() } RETURN COUNT { (a)-->() } AS c",
    ],
)
def test_reads_pass(query: str) -> None:
    parsed = check_read_only(query)
    assert parsed.tree is not None


def test_ast_layer_refuses_writes_on_its_own() -> None:
    """The whitelist refuses by node type even when the token scan is not run."""
    for query, word in [
        ("CREATE (n)", "CREATE"),
        ("MERGE (n {id: 1})", "MERGE"),
        ("MATCH (n) SET n.x = 1", "SET"),
        ("MATCH (n) DETACH DELETE n", "DETACH DELETE"),
        ("MATCH (n) REMOVE n.x", "REMOVE"),
        ("MATCH (n) FOREACH (x IN [1] | CREATE ())", "FOREACH"),
        ("CALL db.labels()", "db.labels"),
        ("CALL { MATCH (n) RETURN n } RETURN n", "CALL { }"),
        ("LOAD CSV FROM 'file:///x' AS row RETURN row", "LOAD CSV"),
        ("USE other MATCH (n) RETURN n", "USE"),
        ("CREATE INDEX FOR (n:P) ON (n.x)", "admin"),
    ]:
        with pytest.raises(UnsafeQueryError, match=word.replace("{", r"\{").replace("}", r"\}")):
            check_tree(parse_query(query).tree)


def test_token_layer_refuses_what_does_not_parse() -> None:
    """Ladybug-only statements do not parse; the token scan still names them."""
    for query, word in [
        ("LOAD FROM '/etc/passwd' RETURN *", "LOAD"),
        ("COPY Person FROM 'x.csv'", "COPY"),
        ("ATTACH 'x' AS y", "ATTACH"),
        ("EXPORT DATABASE 'x'", "EXPORT"),
    ]:
        with pytest.raises(QuerySyntaxError):
            parse_query(query)
        with pytest.raises(UnsafeQueryError, match=word):
            scan_tokens(tokenize(query), query)


@pytest.mark.parametrize(
    ("query", "word"),
    [
        ("MATCH (n) RETURN apoc.coll.sum([1, 2])", "apoc.coll.sum"),
        ("RETURN db.nameFromElementId('x')", "db.nameFromElementId"),
        ("RETURN nextval('seq')", "nextval"),
        ("RETURN setseed(0.5)", "setseed"),
        ("RETURN current_setting('threads')", "current_setting"),
        ("RETURN read_csv('/etc/passwd')", "read_csv"),
    ],
)
def test_refused_functions(query: str, word: str) -> None:
    with pytest.raises(UnsafeQueryError, match=word):
        check_read_only(query)


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("MATCH ((a)-[:KNOWS]->(b)){1,3} RETURN a", DialectError),
        ("LET x = 1 RETURN x", DialectError),
        ("FOR x IN [1, 2] RETURN x", DialectError),
        ("MATCH (n) FILTER (n WHERE n.x = 1) RETURN n", DialectError),
        ("MATCH (n) RETURN n.x AS x, count(*) AS c GROUP BY x", DialectError),
        ("MATCH (n) WHERE n:`a) DETACH DELETE n //`|B RETURN n", DialectError),
        ("MATCH (n) RETURN `x) DETACH DELETE n //`(1)", UnsafeQueryError),
        ("", QuerySyntaxError),
        ("   \n ", QuerySyntaxError),
        ("// nothing but a comment", QuerySyntaxError),
        ("MATCH (n RETURN n", QuerySyntaxError),
        ("RETURN 'unterminated", QuerySyntaxError),
        ("MATCH (n) RETURN n ORDER", QuerySyntaxError),
    ],
)
def test_unsupported_and_unparseable_are_refused(query: str, error: type[GraphError]) -> None:
    with pytest.raises(error):
        check_read_only(query)


def test_syntax_errors_carry_line_and_column() -> None:
    with pytest.raises(QuerySyntaxError) as info:
        check_read_only("MATCH (n)\nRETURN n.name,")
    assert info.value.line == 2 and info.value.column is not None
    assert "line 2" in str(info.value)


@pytest.mark.parametrize("value", [None, 42, b"MATCH (n) RETURN n", ["RETURN 1"]])
def test_non_strings_are_refused(value: object) -> None:
    with pytest.raises(QuerySyntaxError, match="must be a string"):
        check_read_only(value)  # type: ignore[arg-type]


def test_huge_and_deeply_nested_queries_are_refused_cleanly() -> None:
    with pytest.raises(QuerySyntaxError, match="too long"):
        check_read_only("RETURN " + "1 + " * 40_000 + "1")
    with pytest.raises(QuerySyntaxError):
        check_read_only("RETURN " + "(" * 3000 + "1" + ")" * 3000)
