"""``direction_errors``: an unparseable query has none (it is judged elsewhere), and the parse
failure is logged; a bug in the check is raised."""

from __future__ import annotations

import logging

import pytest

from components.graph.schema import GraphSchema, NodeLabel, RelType, Triple
from components.quizzer import final
from components.quizzer.final import direction_errors

SCHEMA = GraphSchema.build(
    [NodeLabel("A", {"id": "STRING"}), NodeLabel("B", {"id": "STRING"})], [RelType("R", (Triple("A", "R", "B"),))]
)


def test_unparseable_query_has_no_direction_errors_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger=final.__name__):
        assert direction_errors("this is not cypher", SCHEMA) == []
    assert any("direction check skipped" in r.getMessage() for r in caplog.records)
    assert direction_errors("MATCH (b:B)-[:R]->(a:A) RETURN a", SCHEMA) == ["(:B)-[:R]->(:A)"]


def test_a_bug_in_the_check_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(_parsed):
        raise RuntimeError("a bug")

    monkeypatch.setattr(final, "used_triples", boom)
    with pytest.raises(RuntimeError, match="a bug"):
        direction_errors("MATCH (b:B)-[:R]->(a:A) RETURN a", SCHEMA)
