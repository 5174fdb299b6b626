"""Fingerprint properties on real Ladybug databases."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.model import GraphData, Rel
from tests.conftest import contract_graph


def _fingerprint(data: GraphData, path: Path) -> str:
    load_graph(data, path, overwrite=True)
    with LadybugBackend(path) as backend:
        return backend.fingerprint()


def _shuffled(data: GraphData, seed: int) -> GraphData:
    rng = random.Random(seed)
    out = GraphData()
    labels = list(data.nodes)
    rng.shuffle(labels)
    for label in labels:
        rows = list(data.nodes[label].rows)
        rng.shuffle(rows)
        for row in rows:
            props = list(row.items())
            rng.shuffle(props)
            out.add_node(label, row["id"], dict(props))
    rels = [(t, r) for t, rs in data.rels.items() for r in rs.rows]
    rng.shuffle(rels)
    for t, r in rels:
        out.add_rel(t, (r.src_label, r.src_id), (r.dst_label, r.dst_id), r.properties)
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _fingerprint(contract_graph(), tmp_path_factory.mktemp("fp") / "db")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
def test_insertion_order_does_not_matter(tmp_path: Path, reference: str, seed: int) -> None:
    assert _fingerprint(_shuffled(contract_graph(), seed), tmp_path / f"db{seed}") == reference


def _change_node_property(g: GraphData) -> None:
    g.nodes["Person"].rows[1]["age"] += 1


def _change_string_by_one_char(g: GraphData) -> None:
    g.nodes["City"].rows[0]["name"] = "Parix"


def _change_rel_property(g: GraphData) -> None:
    r = g.rels["KNOWS"].rows[0]
    g.rels["KNOWS"].rows[0] = Rel(*r[:4], {"since": r.properties["since"] + 1})


def _reverse_one_relationship(g: GraphData) -> None:
    r = g.rels["KNOWS"].rows[0]
    g.rels["KNOWS"].rows[0] = Rel(r.dst_label, r.dst_id, r.src_label, r.src_id, r.properties)


def _drop_relationship(g: GraphData) -> None:
    g.rels["LIVES_IN"].rows.pop()


def _add_isolated_node(g: GraphData) -> None:
    g.add_node("City", "rome", {"name": "Rome", "population": 2800000})


def _set_property_to_null(g: GraphData) -> None:
    g.nodes["Person"].rows[0]["score"] = None


@pytest.mark.parametrize(
    "mutate",
    [
        _change_node_property,
        _change_string_by_one_char,
        _change_rel_property,
        _reverse_one_relationship,
        _drop_relationship,
        _add_isolated_node,
        _set_property_to_null,
    ],
)
def test_any_single_change_changes_the_fingerprint(tmp_path: Path, reference: str, mutate) -> None:
    g = copy.deepcopy(contract_graph())
    mutate(g)
    assert _fingerprint(g, tmp_path / "db") != reference


def test_fingerprint_is_stable_across_reopen(contract_db: Path) -> None:
    with LadybugBackend(contract_db) as a:
        first = a.fingerprint()
    with LadybugBackend(contract_db) as b:
        assert b.fingerprint() == first
