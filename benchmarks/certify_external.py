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


def _matches(expect: str, cert) -> bool:
    status, _, reason = expect.partition(":")
    if status != cert.status:
        return False
    return not reason or (reason in cert.reasons if status == "partial" else cert.reasons == [reason])


def main() -> None:
    from components.certify import certify_many
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
            qp = ReadOnlyQueryPath(backend, schema=schema)
            t0 = time.perf_counter()
            valid = h.valid_cases(qp, schema, server)
            faults = h.fault_cases(qp, schema, valid, server)
            made = time.perf_counter() - t0
            cases = [c for c in valid + faults if c.candidate.ok]
            for c in cases:
                c.candidate.meta["snapshot_fingerprint"] = fp
            t0 = time.perf_counter()
            certs = certify_many([c.candidate for c in cases], schema=schema, query_path=qp, current_fingerprint=fp)
            took = time.perf_counter() - t0
    questions = len({c.question.id for c in valid})
    print(f"graph: {stats.nodes} nodes, {stats.relationships} relationships; {questions} questions, "
          f"{len(valid)} valid candidates ({Counter(c.style for c in valid)}), {len(faults)} fault variants; "
          f"made in {made:.1f} s, certified in {took:.1f} s")
    rows = list(zip(cases, certs, strict=True))
    ok_valid = [(c, cert) for c, cert in rows if c.kind == "valid"]
    rejected = sum(cert.status == "hard_failure" for _, cert in ok_valid)
    as_stated = sum(_matches(c.expect, cert) for c, cert in ok_valid)
    got = Counter(cert.status if cert.status == "strict" else f"{cert.status}:{','.join(cert.reasons)}"
                  for _, cert in ok_valid)
    print(f"valid: {len(ok_valid)}; rejected {rejected} ({rejected / len(ok_valid):.1%}); "
          f"status as the question file states: {as_stated}/{len(ok_valid)}; {dict(got)}")
    print(f"| fault kind | expected outcome | injected | expected outcome got | strict |")
    print("|---|---|---|---|---|")
    by_kind: dict[str, list] = {}
    for c, cert in rows:
        if c.kind != "valid":
            by_kind.setdefault(c.kind, []).append((c, cert))
    for kind, items in sorted(by_kind.items()):
        caught = sum(_matches(c.expect, cert) for c, cert in items)
        strict = sum(cert.status == "strict" for _, cert in items)
        print(f"| {kind} | {items[0][0].expect} | {len(items)} | {caught} | {strict} |")


if __name__ == "__main__":
    main()
