"""A small social graph with known answers, loaded into a real Ladybug database once per session.

People (KNOWS, with ``since``) and cities (LIVES_IN)::

    Alice -> Bob (2010)   Bob -> Carol (2012)   Carol -> Dave (2015)   Alice -> Carol (2011)
    Bob -> Alice (2013)   Alice -> Eve (2016)   Eve -> Dave (2017)
    Alice, Bob live in Paris; Carol in Rome; Dave and Eve nowhere.

Expected answers in the tests are Neo4j's (hand-computed, or from :func:`trails`, a brute-force
enumeration of paths that never repeat a relationship — Neo4j's matching semantics).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.model import GraphData

PEOPLE = {
    "p1": ("Alice", 30, ["a", "b"]),
    "p2": ("Bob", 25, ["c"]),
    "p3": ("Carol", 35, []),
    "p4": ("Dave", 40, ["d", "e", "f"]),
    "p5": ("Eve", 28, None),
}
NAMES = {pid: name for pid, (name, _age, _tags) in PEOPLE.items()}
KNOWS = [
    ("p1", "p2", 2010),
    ("p2", "p3", 2012),
    ("p3", "p4", 2015),
    ("p1", "p3", 2011),
    ("p2", "p1", 2013),
    ("p1", "p5", 2016),
    ("p5", "p4", 2017),
]
LIVES_IN = [("p1", "c1"), ("p2", "c1"), ("p3", "c2")]
CITIES = {"c1": ("Paris", 2000), "c2": ("Rome", 3000)}


def social_graph() -> GraphData:
    g = GraphData()
    for pid, (name, age, tags) in PEOPLE.items():
        g.add_node("Person", pid, {"name": name, "age": age, "tags": tags})
    for cid, (name, pop) in CITIES.items():
        g.add_node("City", cid, {"name": name, "population": pop})
    for src, dst, since in KNOWS:
        g.add_rel("KNOWS", ("Person", src), ("Person", dst), {"since": since})
    for src, dst in LIVES_IN:
        g.add_rel("LIVES_IN", ("Person", src), ("City", dst))
    return g


def trails(start: str | None, low: int, high: int) -> Iterator[list[int]]:
    """Every directed KNOWS path of ``low..high`` relationships (as indexes into ``KNOWS``) that
    uses no relationship twice, from ``start`` (any person when None)."""
    starts = list(PEOPLE) if start is None else [start]

    def extend(node: str, used: list[int]) -> Iterator[list[int]]:
        if low <= len(used) <= high:
            yield list(used)
        if len(used) == high:
            return
        for i, (src, dst, _since) in enumerate(KNOWS):
            if src == node and i not in used:
                yield from extend(dst, [*used, i])

    for s in starts:
        yield from extend(s, [])


@pytest.fixture(scope="session")
def social_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cypher") / "social"
    load_graph(social_graph(), path)
    return path


@pytest.fixture(scope="session")
def backend(social_db: Path) -> Iterator[LadybugBackend]:
    b = LadybugBackend(social_db)
    yield b
    b.close()


@pytest.fixture(scope="session")
def path(backend: LadybugBackend) -> ReadOnlyQueryPath:
    return ReadOnlyQueryPath(backend, schema=backend.schema())
