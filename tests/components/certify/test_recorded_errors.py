"""Errors the certifier swallows on purpose are the expected ones, logged; others are raised:
an unparseable reversed query is no direction fault, an unparseable evidence query reads
everything, and the Great Expectations progress-bar switch is cosmetic."""

from __future__ import annotations

import logging

import pytest

from components.certify import faults, incremental, quality
from components.certify.incremental import ALL, query_reads
from components.graph.schema import GraphSchema, NodeLabel, RelType, Triple

SCHEMA = GraphSchema.build(
    [NodeLabel("A", {"id": "STRING"}), NodeLabel("B", {"id": "STRING"})], [RelType("R", (Triple("A", "R", "B"),))]
)


def _raise(exc: BaseException):
    def boom(*_a, **_k):
        raise exc

    return boom


def test_unparseable_reversal_is_no_direction_fault(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    with caplog.at_level(logging.DEBUG, logger=faults.__name__):
        assert faults._direction_fault("MATCH (a:A)<-[:R-(b:B) RETURN a", SCHEMA) is False
    assert any("direction fault check skipped" in r.getMessage() for r in caplog.records)
    assert faults._direction_fault("MATCH (b:B)-[:R]->(a:A) RETURN a", SCHEMA) is True
    monkeypatch.setattr(faults, "used_triples", _raise(RuntimeError("a bug")))
    with pytest.raises(RuntimeError, match="a bug"):
        faults._direction_fault("MATCH (b:B)-[:R]->(a:A) RETURN a", SCHEMA)


def test_unparseable_query_reads_everything(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    with caplog.at_level(logging.DEBUG, logger=incremental.__name__):
        assert query_reads("this is not cypher") == frozenset({ALL})
    assert any("does not parse" in r.getMessage() for r in caplog.records)
    monkeypatch.setattr(incremental, "parse_query", _raise(RuntimeError("a bug")))
    with pytest.raises(RuntimeError, match="a bug"):
        query_reads("MATCH (a:A) RETURN a")


def test_progress_bar_switch_failure_is_logged_and_changes_nothing(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from great_expectations.data_context.types import base

    expected = quality.run_expectations([])
    monkeypatch.setattr(base, "ProgressBarsConfig", _raise(TypeError("unexpected keyword 'globally'")))
    with caplog.at_level(logging.DEBUG, logger=quality.__name__):
        out = quality.run_expectations([])
    assert (out["passed"], out["results"]) == (expected["passed"], expected["results"])
    assert any("progress bars" in r.getMessage() for r in caplog.records)
    monkeypatch.setattr(base, "ProgressBarsConfig", _raise(RuntimeError("a bug")))
    with pytest.raises(RuntimeError, match="a bug"):
        quality.run_expectations([])
