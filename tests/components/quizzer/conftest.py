"""The three demo domains, small, loaded once per session into real Ladybug databases."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.sources.demo import DEMO_DOMAINS, generate

SCALE = 200


@pytest.fixture(scope="session")
def demo_dbs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("quizzer_demo")
    out = {}
    for domain in DEMO_DOMAINS:
        load_graph(generate(domain, seed=0, scale=SCALE), root / domain)
        out[domain] = root / domain
    return out


@pytest.fixture(scope="session")
def demo_paths(demo_dbs: dict[str, Path]):
    """domain -> (query path, schema); backends stay open for the session."""
    backends = {d: LadybugBackend(p) for d, p in demo_dbs.items()}
    yield {d: (ReadOnlyQueryPath(b, schema=b.schema()), b.schema()) for d, b in backends.items()}
    for b in backends.values():
        b.close()
