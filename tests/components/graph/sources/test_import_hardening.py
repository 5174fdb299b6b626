"""The three importers and ``load_graph`` on hostile or surprising input: every bad input is an
:class:`ImportFormatError` naming the file and, where there is one, the line (or JSON path) — or
is accepted with the documented semantics. Real files, the real parser, the real engine.

Sections: one test (group) per reviewed case 1-12, fuzzing per importer, and a round-trip
property test through all three file formats.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.graph.errors import GraphError, ImportFormatError
from components.graph.ladybug import LadybugBackend
from components.graph.load import engine_settings, load_graph
from components.graph.model import GraphData
from components.graph.sources.csv_files import CellOutOfRange, read_csv_dir, type_column
from components.graph.sources.cypher_script import (
    MAX_COMMENT_CHARS,
    MAX_LITERAL_CHARS,
    MAX_NESTING,
    MAX_STATEMENT_CHARS,
    read_cypher_script,
    split_statements,
)
from components.graph.sources.grbench import MAX_JSON_DEPTH, read_grbench

ROOT = Path(__file__).resolve().parents[4]


# -- writing real input files ---------------------------------------------------------------------
def csv_dir(root: Path, nodes: dict[str, str], rels: dict[str, str] | None = None) -> Path:
    (root / "nodes").mkdir(parents=True)
    for name, text in nodes.items():
        (root / "nodes" / f"{name}.csv").write_text(text, encoding="utf-8")
    if rels is not None:
        (root / "relationships").mkdir()
        for name, text in rels.items():
            (root / "relationships" / f"{name}.csv").write_text(text, encoding="utf-8")
    return root


def json_file(root: Path, data: Any) -> Path:
    path = root / "graph.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=1), encoding="utf-8")
    return path


def cypher_file(root: Path, text: str) -> Path:
    path = root / "script.cypher"
    path.write_text(text, encoding="utf-8")
    return path


def refused(read: Callable[[Path], Any], src: Path) -> ImportFormatError:
    with pytest.raises(ImportFormatError) as err:
        read(src)
    return err.value


def check_error(err: ImportFormatError, message: str, path: Path, line: int | None) -> None:
    assert message in str(err), str(err)
    assert err.path == str(path)
    assert err.line == line


def loaded_fingerprint(data: GraphData, folder: Path) -> str:
    load_graph(data, folder)
    with LadybugBackend(folder) as backend:
        return backend.fingerprint()


def node(features: dict[str, Any] | None = None, **neighbors: list[Any]) -> dict[str, Any]:
    return {"features": features or {}, "neighbors": neighbors}


# =================================================================================================
# case 1: node labels that differ only in case
# =================================================================================================
CASE_ONLY = "differ only in case"


def test_case1_csv_labels_differing_in_case(tmp_path: Path) -> None:
    root = csv_dir(tmp_path, {"Person": "id\na\n", "person": "id\nb\n"})
    err = refused(read_csv_dir, root)
    check_error(err, "labels 'Person' and 'person' differ only in case", root / "nodes/person.csv", None)
    assert str(root / "nodes/Person.csv") in str(err)  # names the other file too


def test_case1_cypher_labels_differing_in_case(tmp_path: Path) -> None:
    path = cypher_file(tmp_path, "CREATE (:Person {name: 'a'});\n\nCREATE (:PERSON {name: 'b'});")
    check_error(refused(read_cypher_script, path), "labels 'Person' and 'PERSON' differ only in case", path, 3)


def test_case1_grbench_labels_differing_in_case(tmp_path: Path) -> None:
    path = json_file(tmp_path, {"paper_nodes": {"p": node()}, "PAPER_nodes": {"q": node()}})
    check_error(refused(read_grbench, path), "PAPER_nodes: labels 'Paper' and 'PAPER' differ only in case", path, None)


def test_case1_load_graph_refuses_before_creating_anything(tmp_path: Path) -> None:
    g = GraphData()
    g.add_node("Person", "a")
    g.add_node("person", "b")
    with pytest.raises(ImportFormatError, match="labels 'Person' and 'person' differ only in case"):
        load_graph(g, tmp_path / "db")
    assert list(tmp_path.iterdir()) == []


# =================================================================================================
# case 2: a label named like a relationship type (any case)
# =================================================================================================
def test_case2_csv_label_named_like_a_relationship_type(tmp_path: Path) -> None:
    root = csv_dir(tmp_path, {"Knows": "id\na\n"}, {"KNOWS": "source,target\na,a\n"})
    err = refused(read_csv_dir, root)
    check_error(
        err, "label 'Knows' and relationship type 'KNOWS' differ only in case", root / "relationships/KNOWS.csv", None
    )
    assert "share one case-insensitive namespace" in str(err)


@pytest.mark.parametrize(
    ("script", "line", "message"),
    [
        (
            "CREATE (:Knows);\nCREATE (:A)-[:KNOWS]->(:B);",
            2,
            "label 'Knows' and relationship type 'KNOWS' differ only in case",
        ),
        (
            "CREATE (:A)-[:KNOWS]->(:B);\nCREATE (:KNOWS);",
            2,
            "relationship type 'KNOWS' and label 'KNOWS' have the same name",
        ),
    ],
)
def test_case2_cypher_label_named_like_a_relationship_type(
    tmp_path: Path, script: str, line: int, message: str
) -> None:
    path = cypher_file(tmp_path, script)
    check_error(refused(read_cypher_script, path), message, path, line)


def test_case2_grbench_derived_relationship_type_equal_to_a_label(tmp_path: Path) -> None:
    # a "paper" list on a paper names no other type: rule d gives type PAPER, beside label Paper
    path = json_file(tmp_path, {"paper_nodes": {"p": node(paper=["q"]), "q": node()}})
    err = refused(read_grbench, path)
    check_error(err, "paper_nodes/p/neighbors/paper: label 'Paper' and relationship type 'PAPER'", path, None)


# =================================================================================================
# case 3: properties of one label/type that differ only in case (and ID beside the key id)
# =================================================================================================
@pytest.mark.parametrize(
    ("nodes", "rels", "file", "message"),
    [
        ({"A": "id,name,Name\na,1,2\n"}, None, "nodes/A.csv", "properties 'name' and 'Name' of A differ only in case"),
        ({"A": "id,ID\na,1\n"}, None, "nodes/A.csv", "property 'ID' of A clashes with the node key 'id'"),
        (
            {"A": "id\na\n"},
            {"R": "source,target,weight,WEIGHT\na,a,1,2\n"},
            "relationships/R.csv",
            "properties 'weight' and 'WEIGHT' of R differ only in case",
        ),
    ],
)
def test_case3_csv_columns_differing_in_case(tmp_path: Path, nodes, rels, file: str, message: str) -> None:  # type: ignore[no-untyped-def]
    root = csv_dir(tmp_path, nodes, rels)
    check_error(refused(read_csv_dir, root), message, root / file, 1)


@pytest.mark.parametrize(
    ("script", "line", "message"),
    [
        ("CREATE (:A {name: 1, Name: 2});", 1, "properties 'name' and 'Name' of A differ only in case"),
        ("CREATE (:A {name: 1});\nCREATE (:A {NAME: 2});", 2, "properties 'name' and 'NAME' of A"),
        ("CREATE (:A {ID: 'x'});", 1, "property 'ID' of A clashes with the node key 'id'"),
        (
            "CREATE (a:A), (b:A);\nCREATE (a)-[:R {w: 1}]->(b),\n (b)-[:R {W: 2}]->(a);",
            3,
            "properties 'w' and 'W' of R",
        ),
    ],
)
def test_case3_cypher_properties_differing_in_case(tmp_path: Path, script: str, line: int, message: str) -> None:
    path = cypher_file(tmp_path, script)
    check_error(refused(read_cypher_script, path), message, path, line)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"a_nodes": {"x": node({"name": 1}), "y": node({"Name": 2})}},
            "a_nodes/y/features: properties 'name' and 'Name' of A",
        ),
        ({"a_nodes": {"x": node({"Id": 1})}}, "a_nodes/x/features: property 'Id' of A clashes with the node key 'id'"),
    ],
)
def test_case3_grbench_features_differing_in_case(tmp_path: Path, data: Any, message: str) -> None:
    path = json_file(tmp_path, data)
    check_error(refused(read_grbench, path), message, path, None)


def test_case3_load_graph_refuses_properties_differing_in_case(tmp_path: Path) -> None:
    g = GraphData()
    g.add_node("A", "1", {"name": "x"})
    g.add_node("A", "2", {"Name": "y"})
    with pytest.raises(ImportFormatError, match="properties 'name' and 'Name' of A differ only in case"):
        load_graph(g, tmp_path / "db")


# =================================================================================================
# case 4: relationship properties named from / to are accepted (stored, not endpoint ids)
# =================================================================================================
def _from_to_rows(db: Path, rtype: str = "R") -> list[tuple[Any, ...]]:
    with LadybugBackend(db) as b:
        assert set(b.schema().types[rtype].properties) >= {"from", "to"}
        return list(b.run(f"MATCH (a)-[r:{rtype}]->(b) RETURN a.id, b.id, r.`from`, r.`to` ORDER BY a.id").rows)


def test_case4_csv_relationship_columns_from_and_to(tmp_path: Path) -> None:
    root = csv_dir(
        tmp_path / "src", {"A": "id\nx\ny\n"}, {"R": "source,target,from,to,w\nx,y,Berlin,2020,0.5\ny,x,,,\n"}
    )
    load_graph(read_csv_dir(root), tmp_path / "db")
    assert _from_to_rows(tmp_path / "db") == [("x", "y", "Berlin", 2020), ("y", "x", None, None)]


def test_case4_cypher_relationship_properties_from_and_to(tmp_path: Path) -> None:
    path = cypher_file(tmp_path, "CREATE (x:A {id: 'x'})-[:R {from: 'here', to: 'there', FROM_: 1}]->(y:A {id: 'y'});")
    load_graph(read_cypher_script(path), tmp_path / "db")
    assert _from_to_rows(tmp_path / "db") == [("x", "y", "here", "there")]


def test_case4_load_graph_from_to_in_any_case_and_beside_a_placeholder_name(tmp_path: Path) -> None:
    g = GraphData()
    for n in ("x", "y"):
        g.add_node("A", n)
        g.add_node("B", n + "b")
    props = {"from": "f", "To": 7, "gd_prop_0": "not a placeholder", "w": 1.5}
    g.add_rel("R", ("A", "x"), ("A", "y"), props)
    g.add_rel("R", ("A", "y"), ("B", "xb"), {"from": "g"})  # a second FROM/TO pair, copied separately
    load_graph(g, tmp_path / "db")
    with LadybugBackend(tmp_path / "db") as b:
        assert b.schema().types["R"].properties == {
            "from": "STRING",
            "To": "INT64",
            "gd_prop_0": "STRING",
            "w": "DOUBLE",
        }
        rows = b.run("MATCH (a)-[r:R]->(c) RETURN a.id, c.id, r.`from`, r.`To`, r.gd_prop_0, r.w ORDER BY a.id").rows
    assert rows == (("x", "y", "f", 7, "not a placeholder", 1.5), ("y", "xb", "g", None, None, None))
    # and the fingerprint is the graph's, whatever the import did internally
    twin = tmp_path / "twin"
    assert loaded_fingerprint(g, twin) == LadybugBackend(tmp_path / "db").fingerprint()


# =================================================================================================
# case 5: integers beyond INT64 (and non-finite floats): errors with file and line / key
# =================================================================================================
@pytest.mark.parametrize(
    ("cells", "line", "message"),
    [
        ("1\n99999999999999999999", 3, "column n: integer 99999999999999999999 does not fit INT64"),
        ("1.5\n-9223372036854775809", 3, "integer -9223372036854775809 does not fit INT64"),  # a DOUBLE column
        ("1\n" + "7" * 5000, 3, "(5000 digits) does not fit INT64"),  # beyond Python's int() digit limit
        ("2\n1e400", 3, "number 1e400 is out of range for DOUBLE"),
    ],
)
def test_case5_csv_numbers_out_of_range(tmp_path: Path, cells: str, line: int, message: str) -> None:
    root = csv_dir(tmp_path, {"A": "id,n\n" + "\n".join(f"r{i},{c}" for i, c in enumerate(cells.split("\n"))) + "\n"})
    check_error(refused(read_csv_dir, root), message, root / "nodes/A.csv", line)


def test_case5_csv_extreme_int64_values_are_kept_and_text_columns_stay_text(tmp_path: Path) -> None:
    root = csv_dir(tmp_path / "src", {"A": f"id,n,t\na,{-(2**63)},x\nb,{2**63 - 1},99999999999999999999\n"})
    g = read_csv_dir(root)
    assert g.nodes["A"].properties == {"n": "INT64", "t": "STRING"}
    assert [r["n"] for r in g.nodes["A"].rows] == [-(2**63), 2**63 - 1]
    assert g.nodes["A"].rows[1]["t"] == "99999999999999999999"
    with pytest.raises(CellOutOfRange):
        type_column(["1", "99999999999999999999"])
    load_graph(g, tmp_path / "db")


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            '{"a_nodes": {"x": {"features": {"n": 1}},\n "y": {"features": {"n": 99999999999999999999}}}}',
            2,
            "integer 99999999999999999999 does not fit INT64",
        ),
        ('{"a_nodes": {"x": {"features": {"m": {"deep": [1,\n\n-9223372036854775809]}}}}}', 3, "does not fit INT64"),
        ('{"a_nodes": {"x": {"features": {"n": 1' + "0" * 5000 + "}}}}", 1, "(5001 digits) does not fit INT64"),
        ('{"a_nodes": {"x": {"features": {"f":\n 1e400}}}}', 2, "number 1e400 is out of range for a double"),
        ('{"a_nodes": {"x": {"features": {"s": "NaN",\n "f": NaN}}}}', 2, "NaN is not a JSON value"),
        ('{"a_nodes": {"x": {"features": {"f": [1,\n -Infinity]}}}}', 2, "-Infinity is not a JSON value"),
    ],
)
def test_case5_grbench_numbers_out_of_range(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = json_file(tmp_path, text)
    check_error(refused(read_grbench, path), message, path, line)


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ("99999999999999999999", "integer 99999999999999999999 does not fit INT64"),
        ("-9223372036854775809", "integer -9223372036854775809 does not fit INT64"),
        ("[1, 2, 9223372036854775808]", "integer 9223372036854775808 does not fit INT64"),
        ("0xFFFFFFFFFFFFFFFFF", "does not fit INT64"),
        ("1e400", "not finite"),
    ],
)
def test_case5_cypher_numbers_out_of_range(tmp_path: Path, literal: str, message: str) -> None:
    path = cypher_file(tmp_path, f"CREATE (:A {{n: 1}});\nCREATE (:A {{n: {literal}}});")
    check_error(refused(read_cypher_script, path), message, path, 2)


def test_case5_cypher_int64_bounds_are_kept(tmp_path: Path) -> None:
    path = cypher_file(tmp_path, "CREATE (:A {lo: -9223372036854775808, hi: 9223372036854775807});")
    g = read_cypher_script(path)
    assert g.nodes["A"].rows[0]["lo"] == -(2**63) and g.nodes["A"].rows[0]["hi"] == 2**63 - 1
    load_graph(g, tmp_path / "db")
    with LadybugBackend(tmp_path / "db") as b:
        assert b.run("MATCH (a:A) RETURN a.lo, a.hi").rows == ((-(2**63), 2**63 - 1),)


def test_case5_load_graph_names_the_property_of_an_out_of_range_value(tmp_path: Path) -> None:
    g = GraphData()
    g.add_node("A", "1", {"n": 2**63})
    with pytest.raises(ImportFormatError, match=r"values of A\.n do not fit INT64"):
        load_graph(g, tmp_path / "db")


# =================================================================================================
# case 6: deeply nested JSON
# =================================================================================================
def test_case6_grbench_nesting_beyond_the_parser_gives_its_line(tmp_path: Path) -> None:
    path = json_file(tmp_path, '{"a_nodes": {"x": {"features":\n {"n": ' + "[" * 100_000 + "]" * 100_000 + "}}}}")
    check_error(refused(read_grbench, path), f"JSON nested more than {MAX_JSON_DEPTH} levels deep", path, 2)


def test_case6_grbench_nesting_within_the_parser_but_beyond_the_limit_gives_the_json_path(tmp_path: Path) -> None:
    path = json_file(tmp_path, '{"a_nodes": {"x": {"features": {"n": ' + "[" * 150 + "]" * 150 + "}}}}")
    check_error(refused(read_grbench, path), "a_nodes/x/features/n: JSON nested more than 100 levels deep", path, None)


def test_case6_grbench_nesting_up_to_the_limit_is_json_encoded(tmp_path: Path) -> None:
    depth = MAX_JSON_DEPTH - 4  # root, table, node and features hold the value
    path = json_file(tmp_path, '{"a_nodes": {"x": {"features": {"n": ' + "[" * depth + "]" * depth + "}}}}")
    assert read_grbench(path).nodes["A"].rows[0]["n"] == "[" * depth + "]" * depth


# =================================================================================================
# case 7: duplicate node ids and duplicate JSON keys
# =================================================================================================
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a_nodes": {"x": {"features": {"n": 1}}, "x": {"features": {"n": 2}}}}', "a_nodes: duplicate node id 'x'"),
        ('{"a_nodes": {"x": {}}, "a_nodes": {"y": {}}}', "top level: duplicate key 'a_nodes'"),
        ('{"a_nodes": {"x": {"features": {}, "features": {}}}}', "a_nodes/x: duplicate key 'features'"),
        ('{"a_nodes": {"x": {"features": {"n": 1, "n": 2}}}}', "a_nodes/x/features: duplicate key 'n'"),
        ('{"a_nodes": {"x": {"features": {"m": [{"k": 1, "k": 1}]}}}}', "a_nodes/x/features/m/0: duplicate key 'k'"),
        ('{"a_nodes": {"x": {"neighbors": {"r": [], "r": ["x"]}}}}', "a_nodes/x/neighbors: duplicate key 'r'"),
    ],
)
def test_case7_grbench_duplicates_are_refused(tmp_path: Path, text: str, message: str) -> None:
    path = json_file(tmp_path, text)
    check_error(refused(read_grbench, path), message, path, None)


# =================================================================================================
# case 8: names starting with '_' are reserved, in every importer
# =================================================================================================
RESERVED = "names starting with '_' are reserved for internal keys"


@pytest.mark.parametrize(
    ("script", "line", "name"),
    [
        ("CREATE (:A {x: 1});\nCREATE (:A {_id: 'x'});", 2, "'_id'"),
        ("CREATE (:A {` _x`: 1});", 1, "' _x'"),
        ("CREATE (:_A);", 1, "'_A'"),
        ("CREATE (:A)-[:_R]->(:B);", 1, "'_R'"),
        ("CREATE (:A)-[:R {_w: 1}]->(:B);", 1, "'_w'"),
    ],
)
def test_case8_cypher_reserved_names(tmp_path: Path, script: str, line: int, name: str) -> None:
    path = cypher_file(tmp_path, script)
    err = refused(read_cypher_script, path)
    check_error(err, RESERVED, path, line)
    assert name in str(err)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"a_nodes": {"x": node({"_n": 1})}}, "a_nodes/x/features/_n: invalid property name '_n'"),
        ({"a_nodes": {"x": node({"＿n": 1})}}, "invalid property name '＿n'"),  # a fullwidth '_' folds to '_'
        ({"_a_nodes": {"x": node()}}, "_a_nodes: invalid label '_a'"),
        ({"a_nodes": {"x": node(_r=["x"])}}, "a_nodes/x/neighbors/_r: neighbor key '_r' starts with '_'"),
    ],
)
def test_case8_grbench_reserved_names(tmp_path: Path, data: Any, message: str) -> None:
    path = json_file(tmp_path, data)
    err = refused(read_grbench, path)
    check_error(err, message, path, None)


@pytest.mark.parametrize(
    ("nodes", "file", "line"),
    [({"A": "id,_x\na,1\n"}, "nodes/A.csv", 1), ({"_A": "id\na\n"}, "nodes/_A.csv", None)],
)
def test_case8_csv_reserved_names(tmp_path: Path, nodes: dict[str, str], file: str, line: int | None) -> None:
    root = csv_dir(tmp_path, nodes)
    check_error(refused(read_csv_dir, root), RESERVED, root / file, line)


# =================================================================================================
# case 9: Cypher input limits, checked in linear time before parsing
# =================================================================================================
@pytest.mark.parametrize(
    ("make", "line", "message"),
    [
        (lambda: "CREATE (:A);\nCREATE (:A {s: '" + "x" * 5_000_000 + "'});", 2, "string literal longer than 1 MiB"),
        (
            lambda: "CREATE (:A);\n\nCREATE (:`" + "L" * (MAX_LITERAL_CHARS + 1) + "`);",
            3,
            "backticked name longer than 1 MiB",
        ),
        (
            lambda: "CREATE (:A);\n// " + "c" * (MAX_COMMENT_CHARS + 1) + "\nCREATE (:B);",
            2,
            "comment longer than 1 MiB",
        ),
        (
            lambda: "CREATE (:A);\n/* " + "c" * (MAX_COMMENT_CHARS + 1) + " */ CREATE (:B);",
            2,
            "comment longer than 1 MiB",
        ),
        (
            lambda: (
                "CREATE (:A);\nCREATE " + ", ".join(["(:B {s: '" + "x" * 1000 + "'})"] * (MAX_STATEMENT_CHARS // 1000))
            ),
            1,
            "statement longer than 2 MiB",
        ),
        (
            lambda: "CREATE (:A {x:\n " + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1) + "});",
            2,
            f"brackets nested more than {MAX_NESTING} levels deep",
        ),
    ],
)
def test_case9_cypher_input_limits(tmp_path: Path, make: Callable[[], str], line: int, message: str) -> None:
    path = cypher_file(tmp_path, make())
    start = time.perf_counter()
    err = refused(read_cypher_script, path)
    assert time.perf_counter() - start < 2.0  # refused by the scanner, not after a parse
    check_error(err, message, path, line)


def test_case9_a_literal_at_the_limit_is_accepted(tmp_path: Path) -> None:
    path = cypher_file(tmp_path, "CREATE (:A {s: '" + "x" * MAX_LITERAL_CHARS + "'});")
    assert len(read_cypher_script(path).nodes["A"].rows[0]["s"]) == MAX_LITERAL_CHARS


# =================================================================================================
# case 10: unterminated comments/strings refused with their line, in linear time
# =================================================================================================
@pytest.mark.parametrize(
    ("script", "line", "message"),
    [
        ("CREATE (:A);\n\nCREATE (:B) /* never\n closed", 3, "Unterminated /* comment"),
        ("CREATE (:A);\nCREATE (:B {s: 'open});\nCREATE (:C);", 2, "Unterminated string literal"),
        ('CREATE (:A {s: "a\\"});', 1, "Unterminated string literal"),  # the \" is escaped
        ("CREATE (:A);\nCREATE (:`B``);", 2, "Unterminated backticked name"),
        ("CREATE (:A {s: '\\ud800'});", 1, "lone surrogate"),
        ("CREATE (:A);\nCREATE (:A {s: '\\UFFFFFFFF'});", 2, "beyond U+10FFFF"),
    ],
)
def test_case10_unterminated_tokens_name_their_line(tmp_path: Path, script: str, line: int, message: str) -> None:
    path = cypher_file(tmp_path, script)
    check_error(refused(read_cypher_script, path), message, path, line)


def _refusal_time(script: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        with pytest.raises(ImportFormatError, match="Unterminated /\\* comment"):
            split_statements(script)
        best = min(best, time.perf_counter() - start)
    return best


def test_case10_splitting_is_linear() -> None:
    # The old regex splitter restarted its lazy `/\*.*?\*/` at every '/*' of an unclosed comment:
    # 10x the input took ~100x the time (0.02 s -> 2.1 s for 15k -> 150k characters).
    # Many closed comments + strings, then an unclosed one: the scanner visits each token once.
    unit = "/* c */ 'a;b' "
    small, large = (unit * n + "/* " * n for n in (5_000, 50_000))
    ratio = _refusal_time(large) / _refusal_time(small)
    assert ratio < 30, ratio  # ~10 when linear, ~100 when quadratic
    start = time.perf_counter()
    with pytest.raises(ImportFormatError):
        split_statements("CREATE (:A) " + "/* " * 300_000)  # 900k characters: the old splitter took minutes
    assert time.perf_counter() - start < 1.0


# =================================================================================================
# case 11: empty inputs are errors
# =================================================================================================
@pytest.mark.parametrize(
    ("nodes", "file", "line", "message"),
    [
        ({"A": "id,name\n", "B": "id\n"}, "nodes", None, "the folder is empty: no node rows in A.csv, B.csv"),
        ({"A": ""}, "nodes/A.csv", 1, "the file is empty: a header line is required"),
        ({"A": "\n\n"}, "nodes/A.csv", 1, "the file is empty"),
    ],
)
def test_case11_csv_empty(tmp_path: Path, nodes: dict[str, str], file: str, line: int | None, message: str) -> None:
    root = csv_dir(tmp_path, nodes)
    check_error(refused(read_csv_dir, root), message, root / file, line)


def test_case11_csv_header_only_file_among_others_is_fine(tmp_path: Path) -> None:
    g = read_csv_dir(csv_dir(tmp_path, {"A": "id\na\n", "B": "id,name\n"}, {"R": "source,target\n"}))
    assert g.node_count == 1 and "B" in g.nodes


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file is empty"),
        (" \n\t\n", "the file is empty"),
        ('{"a_nodes": {}, "b_nodes": {}}', "the file is empty: its '<type>_nodes' tables hold no nodes"),
    ],
)
def test_case11_grbench_empty(tmp_path: Path, text: str, message: str) -> None:
    path = json_file(tmp_path, text)
    check_error(refused(read_grbench, path), message, path, None)


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("", "the script is empty: no statements"),
        ("\n  // nothing here\n/* nor\nhere */ ;;\n", "the script is empty: no statements"),
        ("CREATE INDEX FOR (n:A) ON (n.x);", "the script is empty: it creates no nodes"),
        ("MATCH (a:A {x: 1}) CREATE (a)-[:R]->(a);", "the script is empty: it creates no nodes"),
    ],
)
def test_case11_cypher_empty(tmp_path: Path, script: str, message: str) -> None:
    path = cypher_file(tmp_path, script)
    check_error(refused(read_cypher_script, path), message, path, None)


def test_case11_load_graph_refuses_an_empty_graph(tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError, match="nothing to import: the graph has no nodes"):
        load_graph(GraphData(), tmp_path / "db")
    assert not (tmp_path / "db").exists()


# =================================================================================================
# case 12: an import (and a read) under a 4 GB address-space limit
# =================================================================================================
_UNDER_LIMIT = """
import sys
from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.sources import read_source
data = read_source("csv", sys.argv[1])
load_graph(data, sys.argv[2])
with LadybugBackend(sys.argv[2]) as backend:  # in the same process, as the CLI's graph import does
    print(backend.fingerprint())
"""


def test_case12_import_and_read_under_a_4gb_address_space_limit(tmp_path: Path) -> None:
    from tests.conftest import contract_graph, write_csv_graph

    write_csv_graph(contract_graph(), tmp_path / "src")
    expected = loaded_fingerprint(read_csv_dir(tmp_path / "src"), tmp_path / "reference")
    (tmp_path / "child.py").write_text(_UNDER_LIMIT)
    script = 'ulimit -v 4000000; exec "$0" "$1" "$2" "$3"'
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [
        "bash",
        "-c",
        script,
        sys.executable,
        str(tmp_path / "child.py"),
        str(tmp_path / "src"),
        str(tmp_path / "db"),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == expected


def test_case12_engine_settings_are_bounded() -> None:
    from tests.conftest import contract_graph

    small = engine_settings(contract_graph())
    assert (small.buffer_pool_size, small.max_db_size) == (512 << 20, 1 << 30)
    assert engine_settings(contract_graph(), buffer_pool_mb=100, max_db_mb=100).max_db_size == 128 << 20


def test_case12_an_import_that_outgrows_max_db_size_fails_cleanly(tmp_path: Path) -> None:
    g = GraphData()
    for i in range(60_000):
        g.add_node("A", f"node-{i}", {"text": f"some text for node {i} " * 4})
    with pytest.raises(ImportFormatError, match="pass a larger max_db_mb"):
        load_graph(g, tmp_path / "db", max_db_mb=8)
    assert list(tmp_path.iterdir()) == []


# =================================================================================================
# more malformed input found while hardening
# =================================================================================================
@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            '{"a_nodes": {"x": {"features": {"s": "\\ud800"}}}}',
            "a_nodes/x/features/s: string '\\ud800' holds a lone surrogate",
        ),
        ('{"a_nodes": {"\\udc00": {}}}', "a_nodes: node id: string '\\udc00' holds a lone surrogate"),
        (
            '{"a_nodes": {"x": {"neighbors": {"r": ["\\ud800"]}}}}',
            "neighbor id: string '\\ud800' holds a lone surrogate",
        ),
        ('{"a_nodes": {"x": {"features": {"m": {"\\ud800": 1}}}}}', "a_nodes/x/features/m: string '\\ud800'"),
        ('{"a_nodes": {"x": {"feature": {}}}}', "a_nodes/x: unknown key 'feature'"),
        ('{"a_nodes": {"": {}}}', "a_nodes: empty node id"),
        ('{"a_nodes": {"x": {"neighbors": {"r": [["x"]]}}}}', "neighbor id a list is not a string"),
        ('{"a_nodes": {"x": {"features": null}}}', "a_nodes/x/features must be an object"),
        ('\ufeff{"a_nodes": {"x": {"features": {"ok": true}, "neighbors": {"self": ["x"]}}}}', None),  # BOM: fine
    ],
)
def test_more_grbench_input(tmp_path: Path, data: str, message: str | None) -> None:
    path = json_file(tmp_path, data)
    if message is None:
        assert read_grbench(path).rel_count == 1
    else:
        check_error(refused(read_grbench, path), message, path, None)


def test_more_cypher_input(tmp_path: Path) -> None:
    check_error(
        refused(read_cypher_script, cypher_file(tmp_path, "CREATE (:A {id: ''});")),
        "an 'id' property must not be empty",
        tmp_path / "script.cypher",
        1,
    )
    err = refused(read_cypher_script, tmp_path)  # a folder, not a file
    assert "cannot read the file" in str(err) and err.path == str(tmp_path)
    g = read_cypher_script(cypher_file(tmp_path, "CREATE (:A {s: '\\uD83D\\uDE00 caf\\u00e9'});"))
    assert g.nodes["A"].rows[0]["s"] == "😀 café"  # a surrogate pair is one character


def test_more_csv_input(tmp_path: Path) -> None:
    root = csv_dir(tmp_path, {"A": "id,x\na," + "y" * 200_000 + "\n"})
    check_error(refused(read_csv_dir, root), "field larger than field limit", root / "nodes/A.csv", 2)


def test_load_graph_wraps_bad_strings(tmp_path: Path) -> None:
    g = GraphData()
    g.add_node("A", "\ud800")
    with pytest.raises(ImportFormatError, match="node ids of A are not valid strings"):
        load_graph(g, tmp_path / "db")


# =================================================================================================
# fuzzing: arbitrary input never raises anything but ImportFormatError / GraphError, never hangs
# =================================================================================================
# GRAPHDOJO_FUZZ_EXAMPLES=5000 for a long local run
FUZZ = settings(
    max_examples=int(os.environ.get("GRAPHDOJO_FUZZ_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def survives(read: Callable[[Path], Any], src: Path, work: Path) -> None:
    """``read(src)`` either refuses with an ImportFormatError or yields a graph ``load_graph`` loads
    (or refuses with a GraphError); nothing else, and quickly."""
    start = time.perf_counter()
    try:
        data = read(src)
    except ImportFormatError as exc:
        assert exc.path is not None, exc  # an importer error always names its file
        return
    assert data.node_count > 0
    try:
        load_graph(data, work / "db")
    except GraphError:
        pass
    assert time.perf_counter() - start < 20


def insert_somewhere(draw: st.DrawFn, text: str, snippets: list[str]) -> str:
    cut = draw(st.integers(0, len(text)))
    return text[:cut] + draw(st.sampled_from(snippets)) + text[cut:]


def maybe_mutate(draw: st.DrawFn, text: str, snippets: list[str]) -> str:
    """A valid text three times out of four; else one hostile snippet inserted or a truncation."""
    kind = draw(st.integers(0, 7))
    if kind == 0:
        return insert_somewhere(draw, text, snippets)
    if kind == 1:
        return text[: draw(st.integers(0, len(text)))]
    return text


TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")) | st.sampled_from(list(",\"'\n;\\`/*")), max_size=8
)
CSV_CELLS = st.one_of(
    TEXT,
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.floats(allow_nan=False).map(repr),
    st.sampled_from(["", "true", "FALSE", "2024-02-29", "007", "1e3"]),
)
CSV_HOSTILE = [
    ",",
    "\n",
    '"',
    "\x00",
    "\r",
    ",Name",
    ",ID",
    ",_x",
    ",first name",
    "99999999999999999999",
    "1e400",
    '"unclosed',
    ",id",
    ";",
]


def _csv(rows: list[list[str]]) -> str:
    out = tempfile.SpooledTemporaryFile(mode="w+", newline="")
    csv.writer(out).writerows(rows)
    out.seek(0)
    return out.read()


@st.composite
def csv_folder(draw: st.DrawFn) -> dict[str, str]:
    """A valid CSV folder (``{relative path: text}``), then maybe one mutation: a hostile snippet,
    a truncation, or a hostile file name."""
    files: dict[str, str] = {}
    ids = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), min_size=1, max_size=6, unique=True))
    labels = draw(st.lists(st.sampled_from(["A", "B", "C"]), min_size=1, max_size=3, unique=True))
    owner = {i: labels[k % len(labels)] for k, i in enumerate(ids)}
    for label in labels:
        props = draw(st.lists(st.sampled_from(["name", "age", "from", "note", "order"]), max_size=3, unique=True))
        rows = [["id", *props]] + [[i, *(draw(CSV_CELLS) for _ in props)] for i in ids if owner[i] == label]
        files[f"nodes/{label}.csv"] = _csv(rows)
    for rtype in draw(st.lists(st.sampled_from(["R", "S"]), max_size=2, unique=True)):
        props = draw(st.lists(st.sampled_from(["from", "to", "w", "id"]), max_size=2, unique=True))
        rows = [["source", "target", "source_label", *props]]
        for _ in range(draw(st.integers(0, 4))):
            src, dst = draw(st.sampled_from(ids)), draw(st.sampled_from(ids))
            rows.append([src, dst, owner[src], *(draw(CSV_CELLS) for _ in props)])
        files[f"relationships/{rtype}.csv"] = _csv(rows)
    name = draw(st.sampled_from(sorted(files)))
    files[name] = maybe_mutate(draw, files[name], CSV_HOSTILE)
    if draw(st.integers(0, 9)) == 0:
        files[draw(st.sampled_from(["nodes/a.csv", "nodes/R.csv", "nodes/_C.csv", "relationships/a.csv"]))] = "id\nz\n"
    return files


@FUZZ
@given(files=csv_folder(), raw=st.sampled_from([None]) | st.sampled_from([None]) | st.binary(max_size=80))
def test_fuzz_csv_folder(files: dict[str, str], raw: bytes | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "src"
        for sub in ("nodes", "relationships"):
            (root / sub).mkdir(parents=True)
        for name, text in files.items():
            (root / name).write_text(text, encoding="utf-8", errors="surrogatepass")
        if raw is not None:  # arbitrary bytes as one more node file
            (root / "nodes" / "Raw.csv").write_bytes(raw)
        survives(read_csv_dir, root, Path(tmp))


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False), TEXT)
json_values = st.recursive(
    json_scalars, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(TEXT, kids, max_size=3), max_leaves=8
)
JSON_HOSTILE = [
    '"x": 1, ',
    "NaN",
    "-Infinity",
    "1e400",
    "18446744073709551616",
    '"\\ud800"',
    "[" * 200,
    "{",
    '"',
    ',"extra": 1',
    '"_n": 1, ',
    '"Name": 1, "name": 2, ',
    '"ID": 1, ',
    "\x00",
]


@st.composite
def grbench_text(draw: st.DrawFn) -> str:
    """A valid GRBench document, then maybe one mutation (hostile snippet or truncation)."""
    types = draw(
        st.lists(st.sampled_from(["paper", "author", "item", "brand", "gene"]), min_size=1, max_size=3, unique=True)
    )
    ids = draw(st.lists(TEXT.filter(bool), min_size=1, max_size=6, unique=True))
    doc: dict[str, Any] = {f"{t}_nodes": {} for t in types}
    keys = ["reference", "cited_by", "also_viewed_item", "similar", "author", "paper", "brand", "Gene-binds-Gene"]
    for k, node_id in enumerate(ids):
        features = draw(
            st.dictionaries(
                st.sampled_from(["title", "year", "first name", "tags", "meta", "id", "price"]), json_values, max_size=3
            )
        )
        neighbors = draw(st.dictionaries(st.sampled_from(keys), st.lists(st.sampled_from(ids), max_size=3), max_size=2))
        doc[f"{types[k % len(types)]}_nodes"][node_id] = {"features": features, "neighbors": neighbors}
    return maybe_mutate(draw, json.dumps(doc, indent=draw(st.sampled_from([None, 1]))), JSON_HOSTILE)


@FUZZ
@given(text=grbench_text() | st.text(max_size=40) | json_values.map(json.dumps))
def test_fuzz_grbench_json(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "graph.json"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        survives(read_grbench, path, Path(tmp))


@FUZZ
@given(data=st.binary(max_size=200))
def test_fuzz_grbench_bytes(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "graph.json"
        path.write_bytes(data)
        survives(read_grbench, path, Path(tmp))


CY_VALUES = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.booleans().map(str),
    TEXT.map(lambda t: "'" + t.replace("\\", "\\\\").replace("'", "\\'") + "'"),
    st.sampled_from(["null", "[1, 2.5]", "['a', 'b']", "[]", "date('2020-01-01')", "0x1F", "'\\u00e9'", "'it\\'s'"]),
)
CY_HOSTILE = [
    "99999999999999999999",
    "1e400",
    "'\\ud800'",
    "'\\UFFFFFFFF'",
    " {_id: 1}",
    ":a",
    ":Knows",
    ":KNOWS",
    " {Name: 1}",
    " {ID: 1}",
    "/*",
    "'",
    "`",
    ";",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "MERGE ",
    "$p",
    "\\",
    "[" * 40,
    "-[:R]-",
    "<",
    "\n",
    "1 + 2",
    "{k: 1}",
    "date('x')",
    "[1, 'x']",
]


@st.composite
def cypher_text(draw: st.DrawFn) -> str:
    """A valid CREATE/MATCH script, then maybe one mutation (hostile snippet or truncation)."""
    statements: list[str] = []
    n = draw(st.integers(1, 5))
    labels = [draw(st.sampled_from(["A", "B", "Person", "`My Label`", "Match"])) for _ in range(n)]
    for i, label in enumerate(labels):
        props = draw(
            st.dictionaries(st.sampled_from(["name", "from", "to", "x", "`first name`"]), CY_VALUES, max_size=3)
        )
        if draw(st.booleans()):
            props["id"] = f"'v{i}'"
        body = ", ".join(f"{k}: {v}" for k, v in props.items())
        statements.append(f"CREATE (n{i}:{label} {{{body}}})")
    for _ in range(draw(st.integers(0, 4))):
        a, b = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        props = draw(st.dictionaries(st.sampled_from(["w", "from", "to", "id"]), CY_VALUES, max_size=2))
        body = ", ".join(f"{k}: {v}" for k, v in props.items())
        rtype = draw(st.sampled_from(["R", "LIKES", "`has part`"]))
        arrow = draw(st.sampled_from([f"-[:{rtype} {{{body}}}]->", f"<-[:{rtype} {{{body}}}]-"]))
        form = draw(st.integers(0, 2))
        if form == 0:
            statements.append(f"CREATE (n{a}){arrow}(n{b})")
        elif form == 1:
            statements.append(f"MATCH (p:{labels[a]}), (q:{labels[b]}) CREATE (p){arrow}(q)")
        else:
            statements.append(f"MATCH (p:{labels[a]}) WHERE p.name = {draw(CY_VALUES)} WITH p CREATE (p){arrow}(n{b})")
    if draw(st.booleans()):
        statements.insert(0, "// a comment; with a semicolon\nCREATE INDEX FOR (m:A) ON (m.name)")
    text = draw(st.sampled_from([";\n", "; /* c */ "])).join(statements)
    return maybe_mutate(draw, text, CY_HOSTILE)


@FUZZ
@given(text=cypher_text() | st.text(max_size=60))
def test_fuzz_cypher_script(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "script.cypher"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        survives(read_cypher_script, path, Path(tmp))


@FUZZ
@given(data=st.binary(max_size=200))
def test_fuzz_cypher_bytes(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "script.cypher"
        path.write_bytes(data)
        survives(read_cypher_script, path, Path(tmp))


# =================================================================================================
# round trip: a generated graph, written in each format, imports back to the same graph
# =================================================================================================
LABELS = ["Person", "City", "Film"]
REL_TYPES = ["KNOWS", "LIKES", "VISITED"]
NODE_PROPS = ["name", "age", "score", "flag", "note", "from", "to", "order", "label"]
REL_PROPS = ["since", "weight", "from", "to", "id", "note"]
KINDS: dict[str, st.SearchStrategy[Any]] = {
    # strings start with a letter: CSV has no types and reads "12" / "true" / "" as a number / bool / null
    "str": st.text(
        st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"))
        | st.sampled_from(list(",\"'\n\r\t;\\`/*{}()[] é😀")),
        max_size=10,
    ).map(lambda t: "s" + t),
    "int": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(allow_nan=False, allow_infinity=False),
    "bool": st.booleans(),
}


@st.composite
def graphs(draw: st.DrawFn) -> GraphData:
    """A few labels and relationship types; per label/type each property has one kind; values may be
    missing (null); node ids are unique across labels (GRBench requires it) and hostile."""
    g = GraphData()
    labels = draw(st.lists(st.sampled_from(LABELS), min_size=1, max_size=3, unique=True))
    ids = draw(st.lists(KINDS["str"], min_size=len(labels), max_size=7, unique=True))
    nodes: list[tuple[str, str]] = []
    for k, label in enumerate(labels):
        schema = draw(st.dictionaries(st.sampled_from(NODE_PROPS), st.sampled_from(sorted(KINDS)), max_size=4))
        for node_id in ids[k :: len(labels)]:
            props = {n: draw(st.none() | KINDS[kind]) for n, kind in schema.items()}
            g.add_node(label, node_id, props)
            nodes.append((label, node_id))
    for rtype in draw(st.lists(st.sampled_from(REL_TYPES), max_size=3, unique=True)):
        schema = draw(st.dictionaries(st.sampled_from(REL_PROPS), st.sampled_from(sorted(KINDS)), max_size=3))
        for _ in range(draw(st.integers(1, 5))):
            src, dst = draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes))
            g.add_rel(rtype, src, dst, {n: draw(st.none() | KINDS[kind]) for n, kind in schema.items()})
    return g


def write_csv_folder(g: GraphData, root: Path) -> Path:
    for sub in ("nodes", "relationships"):
        (root / sub).mkdir(parents=True)
    for label, ns in g.nodes.items():
        cols = sorted({k for r in ns.rows for k in r} - {"id"})
        with open(root / "nodes" / f"{label}.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["id", *cols])
            w.writerows([[r["id"], *(_cell(r.get(c)) for c in cols)] for r in ns.rows])
    for rtype, rs in g.rels.items():
        cols = sorted({k for r in rs.rows for k in r.properties})
        with open(root / "relationships" / f"{rtype}.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["source", "target", "source_label", "target_label", *cols])
            w.writerows(
                [
                    [r.src_id, r.dst_id, r.src_label, r.dst_label, *(_cell(r.properties.get(c)) for c in cols)]
                    for r in rs.rows
                ]
            )
    return root


def _cell(value: Any) -> str:
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def write_grbench(g: GraphData, path: Path) -> Path:
    """Type ``Person`` -> ``Person_nodes``; relationship ``KNOWS`` -> neighbor key ``knows`` on its source."""
    doc: dict[str, Any] = {}
    for label, ns in g.nodes.items():
        doc[f"{label}_nodes"] = {
            r["id"]: {"features": {k: v for k, v in r.items() if k != "id" and v is not None}, "neighbors": {}}
            for r in ns.rows
        }
    for rtype, rs in g.rels.items():
        for r in rs.rows:
            neighbors = doc[f"{r.src_label}_nodes"][r.src_id]["neighbors"]
            neighbors.setdefault(rtype.lower(), []).append(r.dst_id)
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def _cypher_value(value: Any) -> str:
    if isinstance(value, str):
        escaped = "".join({"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c, c) for c in value)
        return f"'{escaped}'"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _cypher_map(props: dict[str, Any]) -> str:
    return "{" + ", ".join(f"`{k}`: {_cypher_value(v)}" for k, v in props.items() if v is not None) + "}"


def write_cypher(g: GraphData, path: Path) -> Path:
    """One CREATE per node (bound to ``n<k>``, used bare across statements), one per relationship."""
    var: dict[tuple[str, str], str] = {}
    lines = ["// written by the round-trip test; /* a comment */ with a ; inside"]
    for label, ns in g.nodes.items():
        for r in ns.rows:
            var[(label, r["id"])] = f"n{len(var)}"
            lines.append(f"CREATE ({var[(label, r['id'])]}:{label} {_cypher_map(r)});")
    for rtype, rs in g.rels.items():
        for r in rs.rows:
            lines.append(
                f"CREATE ({var[(r.src_label, r.src_id)]})-[:{rtype} {_cypher_map(dict(r.properties))}]->"
                f"({var[(r.dst_label, r.dst_id)]});"
            )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def grbench_view(g: GraphData) -> GraphData:
    """What GRBench can carry: no relationship properties; a neighbor list holds each (type,
    source, target) once, and a pair stored both ways (a->b and b->a) reads as one fact, so
    parallel and reciprocal relationships are dropped (self-loops kept)."""
    out = GraphData()
    for label, ns in g.nodes.items():
        for r in ns.rows:
            out.add_node(label, r["id"], {k: v for k, v in r.items() if k != "id"})
    for rtype, rs in g.rels.items():
        kept: set[tuple[str, str, str, str]] = set()
        for r in rs.rows:
            edge = (r.src_label, r.src_id, r.dst_label, r.dst_id)
            if edge in kept or (r.dst_label, r.dst_id, r.src_label, r.src_id) in kept:
                continue
            kept.add(edge)
            out.add_rel(rtype, (r.src_label, r.src_id), (r.dst_label, r.dst_id))
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=graphs())
def test_round_trip_through_every_format(g: GraphData) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        expected = loaded_fingerprint(g, work / "original")
        csv_graph = read_csv_dir(write_csv_folder(g, work / "csv"))
        assert loaded_fingerprint(csv_graph, work / "from-csv") == expected
        cypher_graph = read_cypher_script(write_cypher(g, work / "graph.cypher"))
        assert loaded_fingerprint(cypher_graph, work / "from-cypher") == expected
        view = grbench_view(g)
        grbench_graph = read_grbench(write_grbench(view, work / "graph.json"))
        assert loaded_fingerprint(grbench_graph, work / "from-grbench") == loaded_fingerprint(view, work / "view")
