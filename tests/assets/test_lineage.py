"""What a downstream asset reads is decided by Dagster's lineage: the upstream materialization of
its own run, else Dagster's latest materialization of the upstream — never the catalog's newest
row. Real graph, real quizzer and certifier, one Dagster instance, one data root."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from assets.artifacts import pipeline_resources
from assets.certification import certified_dataset_asset, certified_dataset_key
from assets.generation import qa_candidates_asset, qa_candidates_key
from assets.graph import graph_snapshot_asset
from components.certify.dataset import CertifyConfig
from components.graph.snapshot import SourceSpec
from components.quizzer.run import QuizConfig
from components.store import Catalog
from components.store.artifact import Artifact

SOURCE = SourceSpec("generator", "academic", {"seed": 2, "scale": 120})
SMALL, LARGE = QuizConfig(template_n=4, llm_n=0, seed=1), QuizConfig(template_n=7, llm_n=0, seed=1)
CERTIFY = CertifyConfig(fault_sample=0)


def _defs(quiz: QuizConfig, *extra: object) -> list:
    return [
        *graph_snapshot_asset("lab", SOURCE),
        *qa_candidates_asset("lab", quiz),
        *certified_dataset_asset("lab", CERTIFY)[:1],
        *extra,
    ]


def _materialized(result: dg.ExecuteInProcessResult) -> dict[str, dict]:
    return {
        e.asset_key.path[-1]: {k: v.value for k, v in e.event_specific_data.materialization.metadata.items()}
        for e in result.get_asset_materialization_events()
    }


def test_each_run_reads_its_own_upstream_while_another_run_rematerializes_it(tmp_path: Path) -> None:
    instance, resources = dg.DagsterInstance.ephemeral(), pipeline_resources(str(tmp_path))
    interloper: dict[str, dg.ExecuteInProcessResult] = {}

    @dg.asset_check(asset=qa_candidates_key("lab"), name="interloper", blocking=True)
    def _interloper(qa_candidates: Artifact) -> dg.AssetCheckResult:
        """Between this run's qa_candidates and its certified_dataset, another run on the same
        instance and data root materializes qa_candidates with another config (and certifies it)."""
        interloper["run"] = dg.materialize(
            _defs(LARGE),
            selection=[qa_candidates_key("lab"), certified_dataset_key("lab")],
            resources=resources,
            instance=instance,
        )
        return dg.AssetCheckResult(passed=True, metadata={"seen": qa_candidates.fingerprint})

    run = dg.materialize(_defs(SMALL, _interloper), resources=resources, instance=instance)
    assert run.success and interloper["run"].success
    mine, theirs = _materialized(run), _materialized(interloper["run"])
    assert mine["qa_candidates"]["candidates"] == 4 and theirs["qa_candidates"]["candidates"] == 7
    # the catalog's newest qa_candidates row is the other run's: a time-ordered lookup would read it
    newest = Catalog(tmp_path / "catalog.duckdb").latest("qa_candidates", "lab")
    assert newest is not None and newest.fingerprint == theirs["qa_candidates"]["fingerprint"]
    # … but each run's certified_dataset certified its own run's candidates
    assert mine["certified_dataset"]["candidates"] == 4 and theirs["certified_dataset"]["candidates"] == 7
    assert mine["certified_dataset"]["parents"][0] == mine["qa_candidates"]["fingerprint"]
    assert theirs["certified_dataset"]["parents"][0] == theirs["qa_candidates"]["fingerprint"]
    # the check evaluated the materialization it is attached to (this run's), not the newer one
    (check,) = [c for c in run.get_asset_check_evaluations() if c.check_name == "interloper"]
    assert check.metadata["seen"].value == mine["qa_candidates"]["fingerprint"]


def test_an_input_from_an_earlier_run_is_dagsters_latest_materialization_and_recorded(tmp_path: Path) -> None:
    instance, resources = dg.DagsterInstance.ephemeral(), pipeline_resources(str(tmp_path))
    first = _materialized(dg.materialize(_defs(SMALL), resources=resources, instance=instance))
    second = _materialized(
        dg.materialize(_defs(LARGE), selection=[qa_candidates_key("lab")], resources=resources, instance=instance)
    )
    # a run of certified_dataset alone reads the latest materialization of its input (the second)
    alone = dg.materialize(
        _defs(LARGE), selection=[certified_dataset_key("lab")], resources=resources, instance=instance
    )
    cert = _materialized(alone)["certified_dataset"]
    assert cert["candidates"] == 7 and cert["parents"][0] == second["qa_candidates"]["fingerprint"]
    assert cert["parents"][1] == first["graph_snapshot"]["fingerprint"]
    # … and Dagster records which data version of each input it read
    tags = instance.get_latest_materialization_event(certified_dataset_key("lab")).asset_materialization.tags
    assert tags["dagster/input_data_version/lab/qa_candidates"] == second["qa_candidates"]["fingerprint"]
    assert tags["dagster/input_data_version/lab/graph_snapshot"] == first["graph_snapshot"]["fingerprint"]
    assert tags["dagster/data_version"] == cert["fingerprint"]


def test_an_input_never_materialized_is_a_clear_failure(tmp_path: Path) -> None:
    result = dg.materialize(
        _defs(SMALL),
        selection=[qa_candidates_key("lab")],
        resources=pipeline_resources(str(tmp_path)),
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert "lab/graph_snapshot has never been materialized" in str(failure.event_specific_data.error)
