from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from components.graph.errors import ImportFormatError
from components.graph.model import GraphData
from components.graph.sources.cypher_script import read_cypher_script, split_statements

# Shaped like Neo4j's "movies" example: one long CREATE statement ending in a read query, then
# further ';'-separated statements reusing its variables and looking nodes up with MATCH.
MOVIES = """\
// The Matrix, abridged from the Neo4j movies dataset
CREATE (TheMatrix:Movie {title:'The Matrix', released:1999, tagline:'Welcome to the Real World'})
CREATE (Keanu:Person {name:'Keanu Reeves', born:1964})
CREATE (Carrie:Person {name:'Carrie-Anne Moss', born:1967})
CREATE (Laurence:Person {name:'Laurence Fishburne', born:1961})
CREATE (Hugo:Person {name:'Hugo Weaving', born:1960})
CREATE (LillyW:Person:Director {name:'Lilly Wachowski', born:1967})
CREATE (LanaW:Person:Director {name:'Lana Wachowski', born:1965})
CREATE (JoelS:Person {name:'Joel Silver', born:1952})
CREATE
  (Keanu)-[:ACTED_IN {roles:['Neo']}]->(TheMatrix),
  (Carrie)-[:ACTED_IN {roles:['Trinity']}]->(TheMatrix),
  (Laurence)-[:ACTED_IN {roles:['Morpheus']}]->(TheMatrix),
  (Hugo)-[:ACTED_IN {roles:['Agent Smith']}]->(TheMatrix),
  (LillyW)-[:DIRECTED]->(TheMatrix),
  (TheMatrix)<-[:DIRECTED]-(LanaW),
  (JoelS)-[:PRODUCED]->(TheMatrix)
CREATE (Reloaded:Movie {title:'The Matrix Reloaded', released:2003, tagline:'Free your mind'})
CREATE (Keanu)-[:ACTED_IN {roles:['Neo']}]->(Reloaded)
WITH Keanu AS a
MATCH (a)-[:ACTED_IN]->(m)<-[:DIRECTED]-(d) RETURN a, m, d LIMIT 10;

/* reviews use variables bound by the previous statement */
CREATE (Jessica:Person {name: "Jessica Thompson", id: 'jt'})
CREATE (Jessica)-[:REVIEWED {summary:'An amazing journey; truly', rating:95}]->(TheMatrix);

MATCH (p:Person {name: 'Carrie-Anne Moss'}), (m:Movie)
WHERE m.released = 2003
CREATE (p)-[:ACTED_IN {roles: ['Trinity']}]->(m);
MATCH (d:Director) CREATE (d)-[:WROTE {on: date('1998-05-01'), drafts: [1, 2.5]}]->(Reloaded);
MATCH (x:Person {name: 'Nobody'}) CREATE (x)-[:ACTED_IN]->(TheMatrix)
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "script.cypher"
    path.write_text(text, encoding="utf-8")
    return path


def triples(g: GraphData, rtype: str) -> list[tuple[str, str, str, str]]:
    return [(r.src_label, r.src_id, r.dst_label, r.dst_id) for r in g.rels[rtype].rows]


def test_movies_script(tmp_path: Path) -> None:
    g = read_cypher_script(write(tmp_path, MOVIES))
    assert sorted(g.nodes) == ["Movie", "Person"]
    movies = g.nodes["Movie"].rows
    assert movies[0] == {
        "id": "Movie:1",
        "title": "The Matrix",
        "released": 1999,
        "tagline": "Welcome to the Real World",
    }
    people = {r["name"]: r for r in g.nodes["Person"].rows}
    assert len(people) == 8
    assert people["Keanu Reeves"]["id"] == "Person:1"
    assert people["Jessica Thompson"]["id"] == "jt"  # its own id property
    assert people["Lilly Wachowski"]["labels"] == ["Director"]  # second label kept as a property
    assert "labels" not in people["Keanu Reeves"]
    assert g.nodes["Person"].properties["labels"] == "STRING[]"
    keanu, carrie, lilly, lana = (
        people[n]["id"] for n in ("Keanu Reeves", "Carrie-Anne Moss", "Lilly Wachowski", "Lana Wachowski")
    )
    acted = triples(g, "ACTED_IN")
    assert len(acted) == 6
    assert ("Person", keanu, "Movie", "Movie:2") in acted
    assert ("Person", carrie, "Movie", "Movie:2") in acted  # MATCH ... WHERE ... CREATE
    assert g.rels["ACTED_IN"].rows[0].properties == {"roles": ["Neo"]}
    assert sorted(triples(g, "DIRECTED")) == sorted(
        [("Person", lilly, "Movie", "Movie:1"), ("Person", lana, "Movie", "Movie:1")]
    )  # <- reversed
    review = g.rels["REVIEWED"].rows[0]
    assert (review.src_id, review.dst_id) == ("jt", "Movie:1")  # variables carried across ';'
    assert review.properties == {"summary": "An amazing journey; truly", "rating": 95}
    wrote = g.rels["WROTE"].rows  # one per matched Director
    assert sorted(r.src_id for r in wrote) == sorted([lilly, lana])
    assert wrote[0].properties == {"on": dt.date(1998, 5, 1), "drafts": [1.0, 2.5]}
    assert g.rels["WROTE"].properties == {"on": "DATE", "drafts": "DOUBLE[]"}
    assert g.rel_count == 6 + 2 + 1 + 1 + 2  # the MATCH of 'Nobody' created nothing


def test_split_respects_quotes_comments_and_keeps_lines() -> None:
    script = "CREATE (:A {s: 'a;b', t: \"c;d\"}) // e;f\n/* g;\nh */;\n\nCREATE (:`B;C`);\n// only a comment;\n"
    stmts = split_statements(script)
    assert [s.line for s in stmts] == [1, 3]
    assert "'a;b'" in stmts[0].text and "`B;C`" in stmts[1].text
    assert stmts[0].text.count("\n") == 2  # comment newlines kept


def test_unicode_escapes_and_sanitised_names(tmp_path: Path) -> None:
    g = read_cypher_script(write(tmp_path, "CREATE (:`Film Noir` {`first name`: 'Caf\\u00e9 \\\\u00e9', q: 'it\\'s'})"))
    assert g.nodes["Film_Noir"].rows[0] == {"id": "Film_Noir:1", "first_name": "Café \\u00e9", "q": "it's"}


def test_schema_statements_and_trailing_reads_are_ignored(tmp_path: Path) -> None:
    script = (
        "CREATE CONSTRAINT FOR (m:Movie) REQUIRE m.title IS UNIQUE;\n"
        "CREATE (m:Movie {title: 'x'}) RETURN m;\nMATCH (n) RETURN count(n);"
    )
    g = read_cypher_script(write(tmp_path, script))
    assert g.node_count == 1


@pytest.mark.parametrize(
    ("script", "line", "message"),
    [
        ("CREATE (a:A {x: 1});\n\nMERGE (b:B {y: 2});", 3, "MERGE is not supported"),
        ("CREATE (a:A)\nCREATE (b:B)\nCREATE (a)-[:R]->(c);", 3, "unknown variable 'c'"),
        ("CREATE (a:A);\nCREATE (b:B {x: 1}\nCREATE (c:C);", 3, "syntax error: mismatched input 'CREATE'"),
        ("CREATE (a:A);\nCREATE (b:B {x: 'oops});", 2, "Unterminated string literal"),
        ("CREATE (a:A)\nCREATE (b:B {x: $p});", 2, "parameter $p is not supported"),
        ("CREATE (a:A),\n (b:B),\n (a)-[:R]-(b);", 3, "needs a direction"),
        ("CREATE (a:A {x:\n 1 + 2});", 2, "only literal values"),
        ("CREATE (a:A)\nSET a.x = 1;", 2, "SET is not supported"),
        ("MATCH (n)\nDETACH DELETE n;", 2, "DELETE is not supported"),
        ("CREATE (a:A {k: 1});\nMATCH (a:A)\nWHERE a.k > 1 CREATE (a)-[:R]->(:B);", 3, "WHERE supports only"),
        ("CREATE (:A {id: 1});\nCREATE (:A {id: '1'});", 2, "duplicate A id '1'"),
        ("CREATE (a:A);\nMATCH (a)-[:R]->(b) CREATE (b)-[:S]->(:C);", 2, "MATCH may only look up nodes"),
        ("/* two\nlines */ CREATE (a:A);\n// c\nCREATE (b:B {x: [1, 'a']});", 4, "one kind"),
        ("CREATE (a:A)-[:R*2]->(b:B);", 1, "variable-length"),
        ("CREATE (a:A)\nCREATE (a:A);", 2, "already bound"),
        ("CREATE (a:A)-[r:R]->(b:B)\nCREATE (r)-[:S]->(b);", 2, "is a relationship"),
        ("UNWIND [1, 2] AS x\nCREATE (:A {v: x});", 1, "UNWIND is not supported"),
        ("CREATE (a:A {m: {k: 1}});", 1, "a map is not a property value"),
        ("CREATE (:A) UNION CREATE (:B);", 1, "Union statements are not supported"),
    ],
)
def test_errors_name_the_script_line(tmp_path: Path, script: str, line: int, message: str) -> None:
    path = write(tmp_path, script)
    with pytest.raises(ImportFormatError) as err:
        read_cypher_script(path)
    assert message in str(err.value)
    assert (err.value.path, err.value.line) == (str(path), line)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError, match="no such file"):
        read_cypher_script(tmp_path / "none.cypher")
