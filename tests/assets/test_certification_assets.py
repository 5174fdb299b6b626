"""In-process materialization of graph_snapshot -> qa_candidates -> certified_dataset with its
checks, on the real embedded graph, the real sandbox, the real GX suite (and, for the judge, a
real tiny model)."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from assets.artifacts import pipeline_resources
from assets.certification import certified_dataset_asset
from assets.generation import qa_candidates_asset
from assets.graph import graph_snapshot_asset
from components.certify.dataset import CertifyConfig, read_certified
from components.curriculum.build import SplitConfig
from components.graph.snapshot import SourceSpec
from components.quizzer.run import QuizConfig
from components.store import Catalog
from tests.conftest import write_csv_graph

SOURCE = SourceSpec("generator", "academic", {"seed": 2, "scale": 200})
QUIZ = QuizConfig(template_n=16, llm_n=0, seed=1)


def _materialize(root: Path, certify: CertifyConfig, quiz: QuizConfig = QUIZ):
    defs = [
        *graph_snapshot_asset("lab", SOURCE),
        *qa_candidates_asset("lab", quiz),
        *certified_dataset_asset("lab", certify),
    ]
    with dg.DagsterInstance.ephemeral() as instance:
        return dg.materialize(
            defs,
            resources=pipeline_resources(str(root)),
            instance=instance,
            raise_on_error=False,
        )


def _meta(result, name: str):
    (mat,) = [
        e.event_specific_data.materialization
        for e in result.get_asset_materialization_events()
        if e.asset_key.path[-1] == name
    ]
    return mat.metadata


def _checks(result) -> dict[str, bool]:
    return {c.check_name: c.passed for c in result.get_asset_check_evaluations()}


def _eval_file(tmp: Path, items: list[dict]) -> str:
    path = tmp / "eval.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return str(path)


def test_certified_dataset_with_green_checks(tmp_path: Path) -> None:
    probe = _materialize(tmp_path / "probe", CertifyConfig(fault_sample=0))
    rows = read_certified(_meta(probe, "certified_dataset")["path"].value)
    named = next(r for r in rows if r["admitted"] and r["start_node_json"] != "null")
    start = json.loads(named["start_node_json"])
    # an evaluation set that grounds the start node of one admitted candidate
    ev = _eval_file(
        tmp_path, [{"qid": "e1", "question": "Anything about this node?", "answer": "", "entities": [start["id"]]}]
    )
    config = CertifyConfig(
        eval_questions=ev, fault_sample=4, bands={"admitted_rate": (0.5, 1.0), "hard_failure_rate": (0.0, 0.0)}
    )
    result = _materialize(tmp_path / "run", config)
    assert result.success
    checks = _checks(result)
    assert checks == {
        "graph_non_empty": True,
        "admitted_nonzero": True,
        "admitted_reverified": True,
        "no_leakage": True,
        "expectations": True,
        "certifier_accuracy": True,
        "admitted_rate_bounds_check": True,
        "hard_failure_rate_bounds_check": True,
    }
    meta = _meta(result, "certified_dataset")
    rows = read_certified(meta["path"].value)
    admitted = read_certified(meta["admitted_path"].value)
    assert len(rows) == 16 == meta["candidates"].value
    assert [r["id"] for r in admitted] == [r["id"] for r in rows if r["admitted"]]
    assert meta["admitted"].value == len(admitted) > 0
    leaked = [r for r in rows if r["leaked"]]
    assert named["id"] in {r["id"] for r in leaked} and not any(r["admitted"] for r in leaked)
    assert all(json.loads(r["leakage_json"])["matches"][0]["qid"] == "e1" for r in leaked)
    funnel = {r["stage"]: r["count"] for r in (rec.data for rec in meta["funnel"].value.records)}
    assert funnel["candidates"] == 16 and funnel["leakage_dropped"] == len(leaked)
    assert funnel["strict"] + funnel["partial"] + funnel["hard_failure"] == 16
    assert funnel["admitted"] == len(admitted) and funnel["judge:skipped"] == funnel["strict"] + funnel["partial"]
    assert "admitted" in meta["funnel_chart"].value and meta["leakage_rate"].value == len(leaked) / 16
    faults = [r.data for r in meta["certifier_accuracy"].value.records]
    from components.certify.faults import FAULTS

    assert {f["fault"] for f in faults} == set(FAULTS) and len(FAULTS) == 17
    assert all(f["recall"] == 1.0 and f["reason_recall"] == 1.0 for f in faults if f["injected"])
    assert {f["outcome"] for f in faults} == {"hard_failure", "partial", "strict"}
    assert meta["certifier_accuracy_passed"].value is True
    for r in admitted:  # the admitted subset carries its evidence structure; judge off: strict only
        assert r["status"] == "strict" and r["verdict"] == "skipped"
        features = json.loads(r["evidence_features_json"])
        assert len(features) == len(json.loads(r["evidence_json"])) and all(f["ok"] for f in features)
    rec = Catalog(tmp_path / "run" / "catalog.duckdb").get("certified_dataset", "lab", meta["fingerprint"].value)
    # parents in input-name order: the candidates, then the snapshot they were made on
    assert rec.parents == (
        _meta(result, "qa_candidates")["fingerprint"].value,
        _meta(result, "graph_snapshot")["fingerprint"].value,
    )
    # a rerun with nothing changed reads the re-reading checks' results back instead of recomputing
    again = _materialize(tmp_path / "run", config)
    assert _checks(again) == checks
    for result_, cached in ((result, False), (again, True)):
        evaluations = {c.check_name: c.metadata for c in result_.get_asset_check_evaluations()}
        for name in ("expectations", "admitted_reverified", "no_leakage"):
            assert evaluations[name]["cached"].value is cached, name
    assert len(list((tmp_path / "run" / "check-cache" / "lab").glob("*.json"))) == 3


def test_a_noisy_pool_shows_its_composition_and_its_funnel_by_source(tmp_path: Path) -> None:
    noisy = QuizConfig(template_n=24, llm_n=0, seed=1, noise={"hard": 0.25, "semantic": 0.25})
    result = _materialize(tmp_path, CertifyConfig(fault_sample=0), noisy)
    assert result.success
    pool = {r.data["source"]: r.data["count"] for r in _meta(result, "qa_candidates")["pool_by_source"].value.records}
    assert pool["hard"] == pool["semantic"] > 0 and sum(pool.values()) == 24
    assert _meta(result, "qa_candidates")["pool_composition"].value["requested"]["hard"] == 0.25
    meta = _meta(result, "certified_dataset")
    rows = [r.data for r in meta["funnel_by_source"].value.records]
    assert sum(r["candidates"] for r in rows if r["source"] == "hard") == pool["hard"]
    assert all(r["admitted"] == 0 == r["strict"] for r in rows if r["source"] == "hard")
    assert all(r["admitted"] == r["candidates"] for r in rows if r["source"] == "semantic")  # no judge to stop them
    chart = meta["funnel_by_source_chart"].value
    assert f"0 of {pool['hard']} admitted" in chart and f"{pool['semantic']} of {pool['semantic']} admitted" in chart


def test_blocking_checks_fail_when_nothing_is_admitted(tmp_path: Path) -> None:
    """An evaluation set naming every node of the graph admits nothing: the blocking check fails
    (the run reports it) and the bounds check warns."""
    from components.graph.sources.demo import generate

    data = generate("academic", seed=2, scale=200)
    ids = [row["id"] for table in data.nodes.values() for row in table.rows]
    ev = _eval_file(tmp_path, [{"qid": "all", "question": "everything", "answer": "", "entities": ids}])
    result = _materialize(
        tmp_path, CertifyConfig(eval_questions=ev, fault_sample=0, bands={"admitted_rate": (0.5, 1.0)})
    )
    checks = _checks(result)
    assert checks["admitted_nonzero"] is False and checks["admitted_rate_bounds_check"] is False
    assert checks["no_leakage"] is True and checks["expectations"] is True
    assert _meta(result, "certified_dataset")["admitted"].value == 0


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from components.llm.models import tiny_random_model

    return tiny_random_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


def test_judge_on_admits_only_accepted(tmp_path: Path, tiny_model: Path) -> None:
    """A random tiny judge never writes a verdict line: every certified candidate is
    ``uncertain`` and none is admitted — the judge's stage is real, and blocking."""
    config = CertifyConfig(
        judge="on", judge_options={"model_dir": str(tiny_model), "threads": 1}, judge_max_new_tokens=8, fault_sample=0
    )
    result = _materialize(tmp_path, config, QuizConfig(template_n=4, llm_n=0, seed=1))
    rows = read_certified(_meta(result, "certified_dataset")["path"].value)
    certified = [r for r in rows if r["status"] != "hard_failure"]
    assert certified and {r["verdict"] for r in certified} == {"uncertain"}
    assert all(json.loads(r["judge_json"])["completion_tokens"] > 0 for r in certified)
    assert not any(r["admitted"] for r in rows)
    assert _checks(result)["admitted_nonzero"] is False


def test_curriculum_splits_from_the_certified_dataset(tmp_path: Path) -> None:
    from assets.training import curriculum_splits_asset

    defs = [
        *graph_snapshot_asset("lab", SOURCE),
        *qa_candidates_asset("lab", QUIZ),
        *certified_dataset_asset("lab", CertifyConfig(fault_sample=0)),
        *curriculum_splits_asset("lab", SplitConfig(seed=2, trajectories=True)),
    ]
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize(defs, resources=pipeline_resources(str(tmp_path)), instance=instance)
    assert result.success and _checks(result)["no_entity_crosses_splits"] is True
    meta = _meta(result, "curriculum_splits")
    import pyarrow.parquet as pq

    items = pq.read_table(meta["path"].value).to_pylist()
    assert len(items) == meta["items"].value == _meta(result, "certified_dataset")["admitted"].value
    assert meta["crossing_entities"].value == 0
    assert {i["split"] for i in items} <= {"train", "validation", "test"}
    assert [r.data["stage point"] for r in meta["sampler_p"].value.records] == ["start", "middle", "end"]
    # measured levels: executed Graph-CoT teacher trajectories, with their coverage and confusion
    measured = [i for i in items if i["level_source"] == "measured"]
    assert measured and meta["teacher_trajectories"].value == len(measured)
    assert "| estimated |" in meta["level_confusion"].value and "| family |" in meta["trajectory_coverage"].value


def test_a_changed_graph_is_recertified_incrementally_and_equals_a_full_run(tmp_path: Path) -> None:
    from components.graph.sources.demo import generate

    graph = generate("academic", seed=2, scale=200)
    src = tmp_path / "src"
    write_csv_graph(graph, src)
    quiz = QuizConfig(template_n=24, llm_n=0, seed=1)
    config = CertifyConfig(fault_sample=0)

    def run(root: Path, instance: dg.DagsterInstance):
        defs = [
            *graph_snapshot_asset("lab", SourceSpec("csv", str(src))),
            *qa_candidates_asset("lab", quiz),
            *certified_dataset_asset("lab", config),
        ]
        result = dg.materialize(defs, resources=pipeline_resources(str(root)), instance=instance)
        meta = _meta(result, "certified_dataset")
        rec = Catalog(root / "catalog.duckdb").get("certified_dataset", "lab", meta["fingerprint"].value)
        return read_certified(meta["path"].value), rec

    # the earlier run the incremental one builds on is the asset's previous materialization
    instance = dg.DagsterInstance.ephemeral()
    first, rec1 = run(tmp_path / "data", instance)
    assert rec1.metadata["reused_certificates"] == 0 and rec1.metadata["reused_from"] is None
    for row in graph.nodes["Venue"].rows:  # the graph changes in one label
        row["name"] = f"{row['name']} II"
    write_csv_graph(graph, src)
    second, rec2 = run(tmp_path / "data", instance)
    full, rec3 = run(tmp_path / "fresh", dg.DagsterInstance.ephemeral())  # a full certification of the changed graph
    assert rec3.metadata["reused_from"] is None
    assert rec2.metadata["reused_from"] == rec1.fingerprint
    assert 0 < rec2.metadata["reused_certificates"] < len(second)
    # equal to the full run in every column but the quizzer's own timings (it ran twice)
    assert _untimed(second) == _untimed(full)
    assert [r["status"] for r in second] == [r["status"] for r in full]


def _untimed(rows: list[dict]) -> list[dict]:
    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in ("elapsed_s", "elapsed_ms", "latency_s")}
        return [strip(x) for x in v] if isinstance(v, list) else v

    return [strip({k: json.loads(v) if k.endswith("_json") else v for k, v in r.items()}) for r in rows]
