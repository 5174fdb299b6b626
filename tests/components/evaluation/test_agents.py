"""``graphrag_context`` skips a retrieved id it cannot resolve and logs why: an id the graph no
longer has (debug), a failed lookup query (warning); any other error is raised."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from components.evaluation import agents
from components.evaluation.agents import graphrag_context
from components.graph.errors import QueryTimeoutError
from components.tools.graph_cot import ErrorCode, _CallFailed


class _Api:
    """The slice of the Graph-CoT API ``graphrag_context`` reads; ``resolve_node`` fails for
    the ids in ``failures``."""

    def __init__(self, failures: dict[str, BaseException]) -> None:
        self.failures = failures
        self.schema = SimpleNamespace(triples=lambda: [("Paper", "WROTE", "Author")])

    def retrieve_node(self, question: str):
        return SimpleNamespace(observation="retrieved: p1, gone, slow", node_ids=("p1", "gone", "slow"))

    def resolve_node(self, node_id: str):
        if node_id in self.failures:
            raise self.failures[node_id]
        return SimpleNamespace(label="Paper")

    def neighbor_check(self, node_id: str, other: str):
        return SimpleNamespace(ok=True, observation=f"{node_id} -> {other}: a1", node_ids=("a1",))


def test_unresolvable_ids_are_skipped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    api = _Api(
        {
            "gone": _CallFailed(ErrorCode.UNKNOWN_NODE, "no node with id 'gone'"),
            "slow": QueryTimeoutError("the lookup timed out"),
        }
    )
    with caplog.at_level(logging.DEBUG, logger=agents.__name__):
        context, ids = graphrag_context(api, "q", hops=1)
    assert context == "retrieved: p1, gone, slow\np1 -> Author: a1"
    assert ids == ["a1", "gone", "p1", "slow"]
    levels = {r.levelno for r in caplog.records if "skipping node" in r.getMessage()}
    assert levels == {logging.DEBUG, logging.WARNING}


def test_a_bug_while_resolving_is_raised() -> None:
    with pytest.raises(RuntimeError, match="a bug"):
        graphrag_context(_Api({"gone": RuntimeError("a bug")}), "q", hops=1)
