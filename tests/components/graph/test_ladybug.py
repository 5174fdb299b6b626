"""Ladybug-specific behaviour: opening, errors, timeouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.graph import open_backend
from components.graph.errors import (
    DatabaseUnavailableError,
    QueryTimeoutError,
    SchemaError,
)
from components.graph.ladybug import LadybugBackend, quote_identifier
from components.graph.load import load_graph
from components.graph.model import GraphData


def test_missing_database_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DatabaseUnavailableError, match="no Ladybug database"):
        LadybugBackend(tmp_path / "nope")


def test_corrupt_database_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "graph.lbug").write_bytes(b"this is not a database" * 100)
    with pytest.raises(DatabaseUnavailableError, match="cannot open"):
        LadybugBackend(tmp_path / "db")


def test_unknown_label_and_property_are_schema_errors(ladybug_backend) -> None:
    with pytest.raises(SchemaError, match="Nope"):
        ladybug_backend.run("MATCH (n:Nope) RETURN n")
    with pytest.raises(SchemaError, match="salary"):
        ladybug_backend.run("MATCH (n:Person) RETURN n.salary")


def test_query_timeout(tmp_path: Path) -> None:
    g = GraphData()
    for i in range(1500):
        g.add_node("N", f"n{i}", {"v": i})
    load_graph(g, tmp_path / "db")
    with LadybugBackend(tmp_path / "db", timeout_ms=150) as backend:
        with pytest.raises(QueryTimeoutError):
            backend.run("MATCH (a:N), (b:N), (c:N) WHERE a.v + b.v + c.v = 17 RETURN count(*)")
        # the connection stays usable after an interrupted query
        assert backend.run("MATCH (a:N) RETURN count(a)").rows == ((1500,),)


def test_closed_backend_refuses_queries(contract_db: Path) -> None:
    backend = open_backend(str(contract_db))
    backend.close()
    with pytest.raises(DatabaseUnavailableError, match="closed"):
        backend.run("RETURN 1")


@pytest.mark.parametrize("name", ["a b", "x`y", "1abc", "", "n) DETACH DELETE n //"])
def test_identifiers_cannot_escape_quoting(name: str) -> None:
    with pytest.raises(SchemaError):
        quote_identifier(name)
