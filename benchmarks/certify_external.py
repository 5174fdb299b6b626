"""The certifier on the external-style set (``tests/data/restaurants/``): valid candidates
rejected, and per fault kind the expected outcome, how many were injected and how many got it.

    python benchmarks/certify_external.py
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _harness():
    spec = importlib.util.spec_from_file_location("restaurants_harness", ROOT / "tests/data/restaurants/harness.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.graph.sources import read_source
    from components.tools.sandbox import SandboxServer

    h = _harness()
    with tempfile.TemporaryDirectory(prefix="gd-ext-") as tmp:
        db = Path(tmp) / "db"
        stats = load_graph(read_source("cypher-script", str(h.GRAPH)), db)
        with LadybugBackend(db) as backend, SandboxServer() as server:
            schema, fp = backend.schema(), backend.fingerprint()
            t0 = time.perf_counter()
            valid, faults, rows = h.certify_cases(ReadOnlyQueryPath(backend, schema=schema), schema, fp, server)
            took = time.perf_counter() - t0
    questions = len({c.question.id for c in valid})
    print(
        f"graph: {stats.nodes} nodes, {stats.relationships} relationships; {questions} questions, "
        f"{len(valid)} valid candidates ({Counter(c.style for c in valid)}), {len(faults)} fault variants; "
        f"made and certified in {took:.1f} s"
    )
    ok_valid = [(c, cert) for c, cert in rows if c.kind == "valid"]
    rejected = sum(cert.status == "hard_failure" for _, cert in ok_valid)
    as_stated = sum(h.matches(c.expect, cert) for c, cert in ok_valid)
    got = Counter(
        cert.status if cert.status == "strict" else f"{cert.status}:{','.join(cert.reasons)}" for _, cert in ok_valid
    )
    print(
        f"valid: {len(ok_valid)}; rejected {rejected} ({rejected / len(ok_valid):.1%}); "
        f"status as the question file states: {as_stated}/{len(ok_valid)}; {dict(got)}"
    )
    print("| fault kind | expected outcome | injected | expected outcome got | strict |")
    print("|---|---|---|---|---|")
    for row in h.fault_table(rows):
        print(f"| {row['kind']} | {row['expect']} | {row['injected']} | {row['caught']} | {row['strict']} |")


if __name__ == "__main__":
    main()
