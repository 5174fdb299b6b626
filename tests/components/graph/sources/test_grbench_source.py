from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from components.graph.errors import ImportFormatError
from components.graph.model import GraphData
from components.graph.sources.grbench import read_grbench


def node(features: dict[str, Any] | None = None, **neighbors: list[Any]) -> dict[str, Any]:
    return {"features": features or {}, "neighbors": neighbors}


# DBLP-shaped: reciprocal author/paper and paper/venue lists, reference + cited_by
DBLP = {
    "paper_nodes": {
        "p1": node(
            {
                "title": "Graph CoT",
                "year": 2024,
                "keywords": ["llm", "graph"],
                "lang": "",
                "meta": {"doi": "10.1/x"},
                "first author": "Ann",
            },
            author=["a1", "a2"],
            venue=["v1"],
            reference=["p2"],
            cited_by=["p3"],
        ),
        "p2": node(
            {"title": "GNNs", "year": 2019, "scores": [1, 2.5]},
            author=["a1"],
            venue=["v1"],
            reference=[],
            cited_by=["p1"],
        ),
        "p3": node({"title": "Agents", "year": 2025}, author=["a2"], venue=[], reference=["p1"], cited_by=[]),
    },
    "author_nodes": {
        "a1": node({"name": "Ann", "organization": "UIUC"}, paper=["p1", "p2"]),
        "a2": node({"name": "Bo", "organization": "MIT"}, paper=["p1", "p3"]),
    },
    "venue_nodes": {"v1": node({"name": "ACL"}, paper=["p1", "p2"])},
}

# Amazon-shaped: symmetric also_viewed_item (stored both ways), directed also_bought_item
AMAZON = {
    "item_nodes": {
        "i1": node(
            {"title": "Kettle", "price": 20.5}, also_viewed_item=["i2"], also_bought_item=["i2", "i3"], brand=["b1"]
        ),
        "i2": node({"title": "Mug", "price": ""}, also_viewed_item=["i1"], also_bought_item=["i1"], brand=["b1"]),
        "i3": node({"title": "Tea"}, also_viewed_item=[], also_bought_item=[], brand=[]),
    },
    "brand_nodes": {"b1": node({"name": "Acme"}, item=["i1", "i2"])},
}

# Hetionet-shaped: "A-verb-B" keys; both-direction edges stored on both ends
HETIONET = {
    "Compound_nodes": {"DB1": node({"name": "aspirin"}, **{"Compound-binds-Gene": ["7"]})},
    "Gene_nodes": {
        "7": node(
            {"name": "PTGS1"},
            **{
                "Gene-interacts-Gene": ["8"],
                "Compound-binds-Gene": ["DB1"],
                "Gene-participates-Biological Process": ["GO:1"],
            },
        ),
        "8": node({"name": "PTGS2"}, **{"Gene-interacts-Gene": ["7"]}),
    },
    "Biological_Process_nodes": {"GO:1": node({"name": "inflammation"})},
}


def write(tmp_path: Path, data: Any, name: str = "graph.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=4))
    return path


def edges(g: GraphData, rtype: str) -> list[tuple[str, str, str, str]]:
    return [(r.src_label, r.src_id, r.dst_label, r.dst_id) for r in g.rels[rtype].rows]


def test_dblp_shape_maps_to_labels_properties_and_one_canonical_relation_per_pair(tmp_path: Path) -> None:
    g = read_grbench(write(tmp_path, DBLP))
    assert list(g.nodes) == ["Paper", "Author", "Venue"]
    assert sorted(g.rels) == ["CITES", "PUBLISHED_IN", "WROTE"]
    p1 = g.nodes["Paper"].rows[0]
    assert p1 == {
        "id": "p1",
        "title": "Graph CoT",
        "year": 2024,
        "keywords": ["llm", "graph"],
        "lang": None,
        "meta": '{"doi": "10.1/x"}',
        "first_author": "Ann",
    }
    assert g.nodes["Paper"].rows[1]["scores"] == [1.0, 2.5]
    assert g.nodes["Paper"].properties["keywords"] == "STRING[]"
    # author.paper and paper.author are the same facts: each once, Author -> Paper
    assert sorted(edges(g, "WROTE")) == [
        ("Author", "a1", "Paper", "p1"),
        ("Author", "a1", "Paper", "p2"),
        ("Author", "a2", "Paper", "p1"),
        ("Author", "a2", "Paper", "p3"),
    ]
    assert sorted(edges(g, "PUBLISHED_IN")) == [("Paper", "p1", "Venue", "v1"), ("Paper", "p2", "Venue", "v1")]
    # reference (citing -> cited) and cited_by (its inverse) merge into one CITES set
    assert sorted(edges(g, "CITES")) == [("Paper", "p1", "Paper", "p2"), ("Paper", "p3", "Paper", "p1")]


def test_amazon_shape_symmetric_lists_collapse_directed_ones_do_not(tmp_path: Path) -> None:
    g = read_grbench(write(tmp_path, AMAZON))
    assert sorted(g.rels) == ["ALSO_BOUGHT", "ALSO_VIEWED", "MADE_BY"]
    assert edges(g, "ALSO_VIEWED") == [("Item", "i1", "Item", "i2")]  # stored on both ends, kept once
    assert edges(g, "ALSO_BOUGHT") == [
        ("Item", "i1", "Item", "i2"),
        ("Item", "i1", "Item", "i3"),
        ("Item", "i2", "Item", "i1"),
    ]  # not fully reciprocal: directed
    assert sorted(edges(g, "MADE_BY")) == [("Item", "i1", "Brand", "b1"), ("Item", "i2", "Brand", "b1")]
    assert g.nodes["Item"].rows[1]["price"] is None  # "" means missing
    assert g.nodes["Item"].properties["price"] == "DOUBLE"


def test_hetionet_shape_uses_the_verb_and_the_metaedge_direction(tmp_path: Path) -> None:
    g = read_grbench(write(tmp_path, HETIONET))
    assert list(g.nodes) == ["Compound", "Gene", "BiologicalProcess"]
    assert edges(g, "BINDS") == [("Compound", "DB1", "Gene", "7")]
    assert edges(g, "INTERACTS") == [("Gene", "7", "Gene", "8")]  # once, though stored twice
    assert edges(g, "PARTICIPATES") == [("Gene", "7", "BiologicalProcess", "GO:1")]


def test_a_folder_holding_graph_json_is_accepted(tmp_path: Path) -> None:
    write(tmp_path, AMAZON)
    assert read_grbench(tmp_path).node_count == 4


def test_unknown_neighbor_id_is_named_or_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = json.loads(json.dumps(DBLP))
    data["paper_nodes"]["p2"]["neighbors"]["reference"] = ["p404"]
    path = write(tmp_path, data)
    with pytest.raises(ImportFormatError, match=r"paper_nodes/p2/neighbors/reference: unknown node id 'p404'") as err:
        read_grbench(path)
    assert err.value.path == str(path)
    with caplog.at_level(logging.WARNING):
        g = read_grbench(path, missing_neighbors="skip")
    assert "skipped 1 neighbor" in caplog.text
    assert ("Paper", "p2", "Paper", "p404") not in edges(g, "CITES")


def test_malformed_json_reports_its_line(tmp_path: Path) -> None:
    path = tmp_path / "graph.json"
    path.write_text('{\n  "paper_nodes": {\n    "p1": {"features": {},}\n  }\n}\n')
    with pytest.raises(ImportFormatError, match="invalid JSON") as err:
        read_grbench(path)
    assert err.value.line == 3
    assert str(err.value).startswith(f"{path}:3: ")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"papers": {}}, "'papers' is not '<type>_nodes'"),
        ([1, 2], "expected a JSON object"),
        ({"paper_nodes": {"x": node()}, "author_nodes": {"x": node()}}, "'x' appears in both"),
        ({"paper_nodes": {"x": {"neighbors": {"author": "y"}}}}, "must be a list of ids"),
        ({"paper_nodes": {"x": 3}}, "a node must be an object"),
        ({"paper_nodes": {"x": node({"a b": 1, "a_b": 2})}}, "two features map to property 'a_b'"),
        (
            {
                "item_nodes": {"i": node(**{"Compound-binds-Gene": ["g"]})},
                "Compound_nodes": {},
                "Gene_nodes": {"g": node()},
            },
            "on a Item node lists a Gene node",
        ),
    ],
)
def test_malformed_structure_is_refused(tmp_path: Path, data: Any, message: str) -> None:
    with pytest.raises(ImportFormatError, match=message):
        read_grbench(write(tmp_path, data))


def test_missing_file_is_an_import_error(tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError, match="no such file"):
        read_grbench(tmp_path / "nope.json")
