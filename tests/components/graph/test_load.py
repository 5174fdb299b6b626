from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from components.graph.errors import ImportFormatError
from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.model import GraphData, infer_property_type
from tests.conftest import contract_graph


def test_existing_database_is_not_overwritten_by_default(tmp_path: Path) -> None:
    load_graph(contract_graph(), tmp_path / "db")
    with pytest.raises(ImportFormatError, match="already exists"):
        load_graph(contract_graph(), tmp_path / "db")


def test_failed_import_leaves_no_partial_database_and_keeps_the_old_one(tmp_path: Path) -> None:
    load_graph(contract_graph(), tmp_path / "db")
    with LadybugBackend(tmp_path / "db") as b:
        before = b.fingerprint()
    bad = contract_graph()
    bad.add_rel("KNOWS", ("Person", "ann"), ("Person", "ghost"))
    with pytest.raises(ImportFormatError, match="unknown node Person:'ghost'"):
        load_graph(bad, tmp_path / "db", overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db"]
    with LadybugBackend(tmp_path / "db") as b:
        assert b.fingerprint() == before


def test_duplicate_node_ids_are_refused(tmp_path: Path) -> None:
    g = GraphData()
    g.add_node("A", "1")
    g.add_node("A", "1")
    with pytest.raises(ImportFormatError, match="duplicate node id"):
        load_graph(g, tmp_path / "db")
    assert not (tmp_path / "db").exists()


def test_bad_identifiers_are_refused() -> None:
    g = GraphData()
    with pytest.raises(ImportFormatError, match="invalid label"):
        g.add_node("Bad Label", "1")
    with pytest.raises(ImportFormatError, match="invalid property name"):
        g.add_node("A", "1", {"x`) DETACH DELETE": 1})


def test_mixed_values_are_widened(tmp_path: Path) -> None:
    g = GraphData()
    g.add_node("A", "1", {"n": 1, "mixed": 1, "when": dt.date(2020, 1, 1)})
    g.add_node("A", "2", {"n": 2.5, "mixed": "two", "when": None})
    load_graph(g, tmp_path / "db")
    with LadybugBackend(tmp_path / "db") as b:
        assert b.schema().labels["A"].properties == {"id": "STRING", "n": "DOUBLE", "mixed": "STRING", "when": "DATE"}
        assert b.run("MATCH (a:A) RETURN a.n AS n, a.mixed AS m ORDER BY a.id").rows == ((1.0, "1"), (2.5, "two"))


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1, 2], "INT64"),
        ([1, 2.0], "DOUBLE"),
        ([True, None], "BOOLEAN"),
        ([1, "a"], "STRING"),
        ([[1], [2.5]], "DOUBLE[]"),
        ([[1], ["x"]], "STRING[]"),
        ([None], "STRING"),
        ([dt.date(2020, 1, 1)], "DATE"),
        ([dt.datetime(2020, 1, 1, 3)], "TIMESTAMP"),
    ],
)
def test_infer_property_type(values, expected) -> None:
    assert infer_property_type(values) == expected
