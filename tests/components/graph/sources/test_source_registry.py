from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from components.graph.errors import ImportFormatError
from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.model import GraphData
from components.graph.sources import SOURCE_FORMATS, generate, read_source
from tests.components.graph.sources.test_csv_source import CITY, KNOWS, LIVES_IN, PERSON
from tests.components.graph.sources.test_csv_source import make as make_csv_dir
from tests.components.graph.sources.test_cypher_script_source import MOVIES
from tests.components.graph.sources.test_grbench_source import DBLP


def test_registry_names() -> None:
    assert list(SOURCE_FORMATS) == ["generator", "grbench-json", "csv", "cypher-script"]


def test_unknown_format_lists_the_valid_ones() -> None:
    with pytest.raises(ImportFormatError, match="valid formats: generator, grbench-json, csv, cypher-script"):
        read_source("graphml", "x.graphml")


def test_bad_options_are_an_import_error() -> None:
    with pytest.raises(ImportFormatError, match="bad options for source format 'csv'"):
        read_source("csv", "some/dir", seed=1)


def test_generator_options_pass_through() -> None:
    assert read_source("generator", "ecommerce", seed=4, scale=150) == generate("ecommerce", 4, 150)


def counts_in_ladybug(data: GraphData, db_dir: Path) -> tuple[Counter[str], Counter[str]]:
    """Load ``data`` into a fresh Ladybug database and count nodes per label and
    relationships per type by querying it back."""
    load_graph(data, db_dir)
    with LadybugBackend(db_dir) as backend:
        nodes = backend.run("MATCH (n) RETURN label(n) AS l, count(*) AS c").rows
        rels = backend.run("MATCH ()-[r]->() RETURN label(r) AS t, count(*) AS c").rows
    return Counter(dict(nodes)), Counter(dict(rels))


def expected_counts(data: GraphData) -> tuple[Counter[str], Counter[str]]:
    return (
        Counter({k: len(v.rows) for k, v in data.nodes.items() if v.rows}),
        Counter({k: len(v.rows) for k, v in data.rels.items() if v.rows}),
    )


def _grbench(tmp_path: Path) -> Path:
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(DBLP))
    return path


def _csv(tmp_path: Path) -> Path:
    (tmp_path / "csv").mkdir()
    return make_csv_dir(tmp_path / "csv", {"Person": PERSON, "City": CITY}, {"LIVES_IN": LIVES_IN, "KNOWS": KNOWS})


def _cypher(tmp_path: Path) -> Path:
    path = tmp_path / "movies.cypher"
    path.write_text(MOVIES)
    return path


@pytest.mark.parametrize(
    ("fmt", "make_src", "options"),
    [
        ("generator", lambda _: "academic", {"seed": 2, "scale": 150}),
        ("generator", lambda _: "ecommerce", {"seed": 2, "scale": 150}),
        ("generator", lambda _: "biomedical", {"seed": 2, "scale": 150}),
        ("grbench-json", _grbench, {}),
        ("csv", _csv, {}),
        ("cypher-script", _cypher, {}),
    ],
)
def test_round_trip_through_ladybug(tmp_path: Path, fmt: str, make_src, options) -> None:  # type: ignore[no-untyped-def]
    data = read_source(fmt, make_src(tmp_path), **options)
    assert data.rel_count > 0
    assert counts_in_ladybug(data, tmp_path / "db") == expected_counts(data)


def test_cypher_script_answers_a_movies_question_after_loading(tmp_path: Path) -> None:
    load_graph(read_source("cypher-script", _cypher(tmp_path)), tmp_path / "db")
    with LadybugBackend(tmp_path / "db") as backend:
        rows = backend.run(
            "MATCH (p:Person)-[r:ACTED_IN]->(m:Movie {title: $title}) RETURN p.name, r.roles ORDER BY p.name",
            {"title": "The Matrix Reloaded"},
        ).rows
    assert rows == (("Carrie-Anne Moss", ["Trinity"]), ("Keanu Reeves", ["Neo"]))
