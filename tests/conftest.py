"""Shared fixtures: a small, fully known property graph loaded into a real Ladybug database
(and into Neo4j when ``NEO4J_URI`` is set)."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")

from components.graph.ladybug import LadybugBackend  # noqa: E402
from components.graph.load import load_graph  # noqa: E402
from components.graph.model import GraphData  # noqa: E402


def contract_graph() -> GraphData:
    """People, cities and companies with directed relations and typed properties.

    ann -KNOWS-> bob -KNOWS-> cat -KNOWS-> ann (a directed triangle); dan knows nobody.
    ann, bob live in Paris; cat, dan in Oslo. ann and cat work at Acme (since 2015 / 2020).
    """
    g = GraphData()
    people = [
        ("ann", {"name": "Ann", "age": 34, "score": 1.5, "born": dt.date(1990, 5, 1), "tags": ["a", "b"]}),
        ("bob", {"name": "Bob", "age": 41, "score": 2.25, "born": dt.date(1983, 1, 9), "tags": ["b"]}),
        ("cat", {"name": "Cat", "age": 29, "score": 3.0, "born": dt.date(1995, 12, 31), "tags": []}),
        ("dan", {"name": "Dan", "age": 52, "score": None, "born": None, "tags": ["c"]}),
    ]
    for pid, props in people:
        g.add_node("Person", pid, props)
    for cid, name, pop in [("paris", "Paris", 2100000), ("oslo", "Oslo", 700000)]:
        g.add_node("City", cid, {"name": name, "population": pop})
    g.add_node("Company", "acme", {"name": "Acme", "public": True})
    for a, b, since in [("ann", "bob", 2010), ("bob", "cat", 2012), ("cat", "ann", 2018)]:
        g.add_rel("KNOWS", ("Person", a), ("Person", b), {"since": since})
    for p, c in [("ann", "paris"), ("bob", "paris"), ("cat", "oslo"), ("dan", "oslo")]:
        g.add_rel("LIVES_IN", ("Person", p), ("City", c))
    g.add_rel("WORKS_AT", ("Person", "ann"), ("Company", "acme"), {"since": 2015})
    g.add_rel("WORKS_AT", ("Person", "cat"), ("Company", "acme"), {"since": 2020})
    g.add_rel("LOCATED_IN", ("Company", "acme"), ("City", "oslo"))
    return g


def write_csv_graph(graph: GraphData, folder: Path) -> None:
    """The test's graph source: a CSV folder (nodes/<Label>.csv, relationships/<TYPE>.csv)."""
    import csv

    for sub in ("nodes", "relationships"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for label, ns in graph.nodes.items():
        cols = sorted({k for r in ns.rows for k in r} - {"id"})
        with open(folder / "nodes" / f"{label}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["id", *cols])
            w.writerows([[r["id"], *("" if r.get(c) is None else r[c] for c in cols)] for r in ns.rows])
    for rtype, rs in graph.rels.items():
        cols = sorted({k for r in rs.rows for k in r.properties})
        with open(folder / "relationships" / f"{rtype}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["source", "target", "source_label", "target_label", *cols])
            w.writerows(
                [
                    [
                        r.src_id,
                        r.dst_id,
                        r.src_label,
                        r.dst_label,
                        *("" if r.properties.get(c) is None else r.properties[c] for c in cols),
                    ]
                    for r in rs.rows
                ]
            )


LAB_DOMAIN = """
name: lab
description: a small academic graph for the operations tests (cpu-tiny model)
source: {format: generator, src: academic, options: {seed: 0, scale: 200}}
quiz: {template_n: 12, llm_n: 0, seed: 0}
certify: {judge: off, fault_sample: 0, eval_questions: eval/lab.jsonl}
train:
  preset: cpu-tiny
  threads: 1
  budgets: {rl_steps: 1, dancer_steps: 1, dpo_steps: 1, pair_questions: 1, rl_questions: 2}
eval: {samples: 1, max_questions: 2, max_turns: 1, max_new_tokens: 16}
ablations:
  - {name: strict-only, data: strict}
"""


def write_lab_domain(folder: Path, text: str = LAB_DOMAIN) -> Path:
    """A domains folder holding ``lab.yaml`` (+ its evaluation questions) for the subprocess tests
    (``GRAPHDOJO_DOMAINS_DIR`` = the folder, ``GRAPHDOJO_DOMAINS=lab``)."""
    (folder / "eval").mkdir(parents=True, exist_ok=True)
    (folder / "eval" / "lab.jsonl").write_text(
        '{"qid": "e1", "question": "Who wrote the held-out paper?", "answer": "nobody", "entities": ["author_999"]}\n'
    )
    (folder / "lab.yaml").write_text(text)
    return folder


@pytest.fixture(scope="session")
def contract_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("contract") / "db"
    load_graph(contract_graph(), path)
    return path


@pytest.fixture()
def ladybug_backend(contract_db: Path):
    with LadybugBackend(contract_db) as backend:
        yield backend


def _load_into_neo4j(driver, data: GraphData) -> None:  # noqa: ANN001
    """Test-only writer: replace the Neo4j database content with ``data`` (parameters only)."""
    from components.graph.ladybug import quote_identifier

    with driver.session() as s:
        s.run("MATCH (n) DETACH DELETE n").consume()
        for label, ns in data.nodes.items():
            s.run(
                f"UNWIND $rows AS row CREATE (n:{quote_identifier(label)}) SET n = row",
                rows=[{k: v for k, v in r.items() if v is not None} for r in ns.rows],
            ).consume()
        for rtype, rs in data.rels.items():
            for rel in rs.rows:
                s.run(
                    f"MATCH (a:{quote_identifier(rel.src_label)} {{id: $a}}), "
                    f"(b:{quote_identifier(rel.dst_label)} {{id: $b}}) "
                    f"CREATE (a)-[r:{quote_identifier(rtype)}]->(b) SET r = $p",
                    a=rel.src_id,
                    b=rel.dst_id,
                    p=dict(rel.properties),
                ).consume()


@pytest.fixture(scope="session")
def neo4j_uri() -> str:
    uri = os.environ.get("NEO4J_URI")
    if not uri:
        pytest.skip("NEO4J_URI is not set: the Neo4j contract tests need a running Neo4j server")
    return uri


@pytest.fixture()
def neo4j_backend(neo4j_uri: str):
    import neo4j as neo4j_driver

    from components.graph.neo4j import Neo4jBackend

    user, password = os.environ.get("NEO4J_USER", "neo4j"), os.environ.get("NEO4J_PASSWORD", "")
    with neo4j_driver.GraphDatabase.driver(neo4j_uri, auth=(user, password)) as driver:
        _load_into_neo4j(driver, contract_graph())
    with Neo4jBackend(neo4j_uri, user, password) as backend:
        yield backend


@pytest.fixture(params=["ladybug", "neo4j"])
def backend(request: pytest.FixtureRequest):
    """Every backend the contract suite runs against."""
    return request.getfixturevalue(f"{request.param}_backend")


def accelerate_launch(processes: int) -> list[str]:
    """The command prefix that starts a script (or ``-m module``) as ``processes`` CPU
    processes over gloo (``accelerate launch``; the caller hides GPUs), on a free port."""
    import socket
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return [
        str(Path(sys.executable).parent / "accelerate"), "launch", "--multi_gpu", "--num_processes", str(processes),
        "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
        "--num_cpu_threads_per_process", "1", "--main_process_port", str(port),
    ]  # fmt: skip


def kill_once_written(target, args: tuple, marker: Path, timeout: float = 600) -> None:  # noqa: ANN001
    """Run ``target(*args)`` in a spawned child and SIGKILL it as soon as ``marker`` exists (a
    resumable state it wrote); the marker must exist afterwards."""
    import multiprocessing
    import time

    child = multiprocessing.get_context("spawn").Process(target=target, args=args)
    child.start()
    deadline = time.monotonic() + timeout
    while not marker.exists() and child.is_alive() and time.monotonic() < deadline:
        time.sleep(0.5)
    child.kill()
    child.join()
    assert marker.exists(), f"the run never wrote {marker}"
