"""Real demo graphs, real template candidates, shared by the certifier tests (session scope)."""

from __future__ import annotations

import pytest

from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.sources.demo import DEMO_DOMAINS, generate
from components.quizzer.template import TemplateQuizzer

SCALE = 200
N = 16  # template candidates per domain


@pytest.fixture(scope="session")
def certify_env(tmp_path_factory: pytest.TempPathFactory):
    """domain -> {"qp", "schema", "fingerprint", "candidates"}; plus "drift": the fingerprint of
    the academic graph generated with another seed (a real changed snapshot)."""
    root = tmp_path_factory.mktemp("certify_demo")
    backends, env = [], {}
    for domain in DEMO_DOMAINS:
        load_graph(generate(domain, seed=0, scale=SCALE), root / domain)
        backend = LadybugBackend(root / domain)
        backends.append(backend)
        schema = backend.schema()
        qp = ReadOnlyQueryPath(backend, schema=schema)
        env[domain] = {
            "qp": qp,
            "schema": schema,
            "fingerprint": backend.fingerprint(),
            "candidates": TemplateQuizzer(qp, schema, seed=0).generate(N),
        }
    load_graph(generate("academic", seed=1, scale=SCALE), root / "academic_drift")
    drift = LadybugBackend(root / "academic_drift")
    env["drift"] = drift.fingerprint()
    drift.close()
    yield env
    for b in backends:
        b.close()
