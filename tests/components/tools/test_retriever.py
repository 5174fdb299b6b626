"""Node retrieval with the real all-MiniLM-L6-v2 embeddings (loaded offline from the wheel)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.schema import GraphSchema, NodeLabel
from components.tools import retriever as retriever_mod
from components.tools.retriever import (
    INDEX_DIRNAME,
    MODEL_NAME,
    MiniLMEmbedder,
    NodeIndex,
    NodeKey,
    choose_text_properties,
    default_index_dir,
    shared_embedder,
)
from tests.conftest import contract_graph


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return shared_embedder(threads=1)


@pytest.fixture(autouse=True)
def _data_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Default index folders go under the data root: keep them inside this test's tmp dir."""
    monkeypatch.setenv("GRAPHDOJO_DATA", str(tmp_path / "data"))
    return tmp_path / "data"


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    path = tmp_path / "db"
    load_graph(contract_graph(), path)
    return path


def test_model_loads_offline_from_the_wheel(embedder: MiniLMEmbedder) -> None:
    assert embedder.name == MODEL_NAME
    assert embedder.dim == 384
    assert embedder.path.name == "model" and (embedder.path / "model.safetensors").is_file()
    vectors = embedder.encode(["Ann", "Paris", "Ann"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vectors[0], vectors[2])  # duplicates encoded once, same vector
    assert embedder.encode([]).shape == (0, 384)


def test_similar_texts_are_closer(embedder: MiniLMEmbedder) -> None:
    a, b, c = embedder.encode(["graph neural networks", "neural networks on graphs", "chocolate cake"])
    assert a @ b > a @ c + 0.3


def test_text_properties_per_label() -> None:
    schema = GraphSchema.build(
        [
            NodeLabel("Gene", {"id": "STRING", "symbol": "STRING", "name": "STRING"}),
            NodeLabel("Paper", {"id": "STRING", "year": "INT64", "Title": "STRING"}),
            NodeLabel("Doc", {"id": "STRING", "body": "STRING", "notes": "STRING"}),
            NodeLabel("Count", {"id": "STRING", "n": "INT64"}),
        ],
        [],
    )
    assert choose_text_properties(schema) == {
        "Count": ("id",),  # no STRING property: the id is the text
        "Doc": ("body",),  # no name-like property: the first STRING one
        "Gene": ("name", "symbol"),
        "Paper": ("Title",),
    }
    assert choose_text_properties(schema, {"Gene": "symbol"})["Gene"] == ("symbol",)
    with pytest.raises(KeyError):
        choose_text_properties(schema, {"Gene": "nope"})
    with pytest.raises(KeyError):
        choose_text_properties(schema, {"Nope": "name"})


def test_retrieve_ranks_the_named_node_first(db: Path, embedder: MiniLMEmbedder) -> None:
    with LadybugBackend(db) as backend:
        index = NodeIndex.open(backend, embedder, progress=False)
    assert len(index) == 7
    for query, expected in [
        ("Ann", NodeKey("Person", "ann")),
        ("Bob", NodeKey("Person", "bob")),
        ("Oslo", NodeKey("City", "oslo")),
        ("Paris, France", NodeKey("City", "paris")),
        ("Acme", NodeKey("Company", "acme")),
    ]:
        hits = index.search(query, k=3)
        assert hits[0].key == expected, (query, hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert index.search("Ann", k=1)[0].score == pytest.approx(1.0, abs=1e-5)  # text is exactly "Ann"
    assert len(index.search("Ann", k=100)) == 7
    assert index.search("   ") == [] and index.search("Ann", k=0) == []
    only_cities = index.search("Ann", k=7, labels=["City"])
    assert {h.label for h in only_cities} == {"City"} and len(only_cities) == 2


def test_index_is_stored_by_fingerprint_outside_the_snapshot_and_reused(
    db: Path, embedder: MiniLMEmbedder, _data_root: Path
) -> None:
    with LadybugBackend(db) as backend:
        first = NodeIndex.open(backend, embedder, progress=False)
        folder = default_index_dir(backend.fingerprint())
        assert folder == _data_root / INDEX_DIRNAME / backend.fingerprint()
        assert not (db / INDEX_DIRNAME).exists()  # the snapshot folder is left untouched
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["graph_fingerprint"] == backend.fingerprint()
        assert manifest["model"] == MODEL_NAME and manifest["count"] == 7
        assert manifest["text_properties"]["Person"] == ["name"]
        assert sorted(p.name for p in folder.iterdir()) == ["embeddings.npy", "manifest.json", "nodes.json"]
        assert not first.reused

        second = NodeIndex.open(backend, embedder, progress=False)
        assert second.reused and second.key == first.key
        np.testing.assert_array_equal(second.embeddings, first.embeddings)
        assert second.keys == first.keys
        # Nothing temporary is left beside the index.
        assert sorted(p.name for p in folder.parent.iterdir() if p.name.startswith(".")) == []


def test_index_is_rebuilt_when_the_graph_or_text_choice_changes(
    tmp_path: Path, db: Path, embedder: MiniLMEmbedder
) -> None:
    folder = tmp_path / "shared_index"
    with LadybugBackend(db) as backend:
        first = NodeIndex.open(backend, embedder, index_dir=folder, progress=False)
        other_text = NodeIndex.open(
            backend, embedder, index_dir=folder, text_properties={"Person": "id"}, progress=False
        )
        assert not other_text.reused and other_text.key != first.key
        stale = NodeIndex.open(backend, embedder, index_dir=folder, fingerprint="f" * 32, progress=False)
        assert not stale.reused and stale.manifest["graph_fingerprint"] == "f" * 32

    changed = contract_graph()
    changed.add_node("Person", "eve", {"name": "Eve"})
    load_graph(changed, tmp_path / "db2")
    with LadybugBackend(tmp_path / "db2") as backend:
        rebuilt = NodeIndex.open(backend, embedder, index_dir=folder, progress=False)
        assert not rebuilt.reused and len(rebuilt) == 8
        assert rebuilt.search("Eve")[0].key == NodeKey("Person", "eve")
        assert NodeIndex.open(backend, embedder, index_dir=folder, progress=False).reused


def test_a_failed_build_leaves_the_previous_index_intact(
    db: Path, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LadybugBackend(db) as backend:
        first = NodeIndex.open(backend, embedder, progress=False)
        folder = default_index_dir(backend.fingerprint())
        before = {p.name: p.read_bytes() for p in folder.iterdir()}

        def broken_save(*args: object, **kwargs: object) -> None:
            raise OSError("disk full")

        monkeypatch.setattr(retriever_mod.np, "save", broken_save)
        with pytest.raises(OSError, match="disk full"):  # a rebuild into the same folder fails
            NodeIndex.open(backend, embedder, index_dir=folder, fingerprint="0" * 32, progress=False)
        monkeypatch.undo()
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
        assert [p.name for p in folder.parent.iterdir() if p.name.startswith(".")] == []
        assert NodeIndex.open(backend, embedder, progress=False).key == first.key


def test_a_folder_without_manifest_is_never_loaded(db: Path, embedder: MiniLMEmbedder) -> None:
    with LadybugBackend(db) as backend:
        folder = default_index_dir(backend.fingerprint())
        folder.mkdir(parents=True)
        (folder / "embeddings.npy").write_bytes(b"partial")
        index = NodeIndex.open(backend, embedder, progress=False)
    assert not index.reused and len(index) == 7
    assert (folder / "manifest.json").is_file()


def test_load_refuses_another_model(db: Path, embedder: MiniLMEmbedder) -> None:
    with LadybugBackend(db) as backend:
        NodeIndex.open(backend, embedder, progress=False)
        folder = default_index_dir(backend.fingerprint())

    class Other:
        name = "other/model"
        dim = 384

        def encode(self, texts, *, batch_size=64, progress=False):  # noqa: ANN001, ANN202
            return np.zeros((len(texts), 384), dtype=np.float32)

    with pytest.raises(ValueError, match="built with"):
        NodeIndex.load(folder, Other())
