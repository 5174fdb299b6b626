from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from components.graph.errors import ImportFormatError
from components.graph.sources.csv_files import read_csv_dir, type_column

PERSON = """id,name,age,score,active,born,zip,note
ann,Ann,34,1.5,true,1990-01-02,007,
bob,Bob,,2,FALSE,1985-12-31,10115,"says ""hi"", twice"

cy,Cy,40,3e2,true,,20095,"two
lines"
"""
CITY = "id,name,population\nber,Berlin,3600000\nann,Annville,12\n"
LIVES_IN = "source,target,source_label,target_label,since\nann,ber,Person,,2010\nbob,ann,,City,\ncy,ber,,City,2020\n"
KNOWS = "source,target,weight\nbob,cy,0.5\n"


def make(tmp_path: Path, nodes: dict[str, str], rels: dict[str, str] | None = None) -> Path:
    (tmp_path / "nodes").mkdir()
    for name, text in nodes.items():
        (tmp_path / "nodes" / f"{name}.csv").write_text(text, encoding="utf-8")
    if rels is not None:
        (tmp_path / "relationships").mkdir()
        for name, text in rels.items():
            (tmp_path / "relationships" / f"{name}.csv").write_text(text, encoding="utf-8")
    return tmp_path


def test_nodes_relationships_and_column_types(tmp_path: Path) -> None:
    g = read_csv_dir(make(tmp_path, {"Person": PERSON, "City": CITY}, {"LIVES_IN": LIVES_IN, "KNOWS": KNOWS}))
    people = g.nodes["Person"]
    assert people.properties == {
        "name": "STRING",
        "age": "INT64",
        "score": "DOUBLE",
        "active": "BOOLEAN",
        "born": "DATE",
        "zip": "STRING",
        "note": "STRING",
    }
    assert people.rows[0] == {
        "id": "ann",
        "name": "Ann",
        "age": 34,
        "score": 1.5,
        "active": True,
        "born": dt.date(1990, 1, 2),
        "zip": "007",
        "note": None,
    }
    assert people.rows[1]["age"] is None and people.rows[1]["active"] is False
    assert people.rows[1]["note"] == 'says "hi", twice'
    assert people.rows[2]["score"] == 300.0 and people.rows[2]["note"] == "two\nlines"
    assert g.nodes["City"].properties == {"name": "STRING", "population": "INT64"}
    lives = [(r.src_label, r.src_id, r.dst_label, r.dst_id, dict(r.properties)) for r in g.rels["LIVES_IN"].rows]
    assert lives == [
        ("Person", "ann", "City", "ber", {"since": 2010}),  # 'ber' only exists as a City
        ("Person", "bob", "City", "ann", {"since": None}),  # 'ann' is a Person too: label given
        ("Person", "cy", "City", "ber", {"since": 2020}),
    ]
    assert g.rels["LIVES_IN"].properties == {"since": "INT64"}
    assert g.rels["KNOWS"].rows[0].properties == {"weight": 0.5}


def test_nodes_only_and_empty_files_are_fine(tmp_path: Path) -> None:
    g = read_csv_dir(make(tmp_path, {"City": CITY, "Empty": "id,name\n"}))
    assert g.node_count == 2 and "Empty" in g.nodes and not g.rels


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        (["1", "-2", ""], ("INT64", [1, -2, None])),
        (["1", "2.5"], ("DOUBLE", [1.0, 2.5])),
        (["True", "false"], ("BOOLEAN", [True, False])),
        (["2024-02-29", ""], ("DATE", [dt.date(2024, 2, 29), None])),
        (["2023-02-29"], ("STRING", ["2023-02-29"])),
        (["1", "x"], ("STRING", ["1", "x"])),
        (["nan", "inf"], ("STRING", ["nan", "inf"])),
        (["00", "1"], ("STRING", ["00", "1"])),
        (["x", "99999999999999999999"], ("STRING", ["x", "99999999999999999999"])),  # text column
        (["", ""], ("STRING", [None, None])),
    ],
)
def test_type_inference(cells: list[str], expected: tuple[str, list[object]]) -> None:
    assert type_column(cells) == expected


@pytest.mark.parametrize(
    ("nodes", "rels", "file", "line", "message"),
    [
        ({"Person": "name\nAnn\n"}, None, "nodes/Person.csv", 1, "lacks required column(s) id"),
        ({"Person": "id,name\nann,Ann\nbob\n"}, None, "nodes/Person.csv", 3, "expected 2 fields"),
        (
            {"Person": 'id,note\nann,"multi\nline"\nann,again\n'},
            None,
            "nodes/Person.csv",
            4,
            "duplicate id 'ann' (first on line 2)",
        ),
        ({"Person": "id,name\n,Ann\n"}, None, "nodes/Person.csv", 2, "empty id"),
        ({"Person": "id,first name\nann,Ann\n"}, None, "nodes/Person.csv", 1, "invalid column name"),
        ({"Bad-Label": "id\nx\n"}, None, "nodes/Bad-Label.csv", None, "invalid label"),
        ({"Person": ""}, None, "nodes/Person.csv", 1, "the file is empty"),
        ({"Person": 'id,name\nann,"Ann\n'}, None, "nodes/Person.csv", 2, "malformed CSV"),
        (
            {"Person": "id\nann\n"},
            {"KNOWS": "source,target\nann,ann\nann,zed\n"},
            "relationships/KNOWS.csv",
            3,
            "unknown target node id 'zed'",
        ),
        (
            {"Person": "id\nann\n", "City": "id\nann\n"},
            {"KNOWS": "source,target,target_label\nann,ann,Person\n"},
            "relationships/KNOWS.csv",
            2,
            "source id 'ann' exists under labels City, Person",
        ),
        (
            {"Person": "id\nann\n"},
            {"KNOWS": "source,target,source_label\nann,ann,City\n"},
            "relationships/KNOWS.csv",
            2,
            "unknown source node City:'ann'",
        ),
        (
            {"Person": "id\nann\n"},
            {"KNOWS": "src,target\nann,ann\n"},
            "relationships/KNOWS.csv",
            1,
            "lacks required column(s) source",
        ),
    ],
)
def test_errors_name_file_and_line(
    tmp_path: Path, nodes: dict[str, str], rels: dict[str, str] | None, file: str, line: int | None, message: str
) -> None:
    root = make(tmp_path, nodes, rels)
    with pytest.raises(ImportFormatError) as err:
        read_csv_dir(root)
    assert message in str(err.value)
    assert err.value.path == str(root / file)
    assert err.value.line == line


def test_a_folder_without_nodes_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError, match="nodes/ subfolder"):
        read_csv_dir(tmp_path)
    (tmp_path / "nodes").mkdir()
    with pytest.raises(ImportFormatError, match="no .csv files"):
        read_csv_dir(tmp_path)
