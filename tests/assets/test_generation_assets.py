"""In-process materialization of graph_snapshot -> qa_candidates on the real embedded graph,
the real sandbox, and (for the LLM path) a real tiny model."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from assets.artifacts import pipeline_resources
from assets.generation import qa_candidates_asset
from assets.graph import graph_snapshot_asset
from components.graph.snapshot import SourceSpec
from components.quizzer.run import QuizConfig, read_candidates
from components.store import Catalog

SOURCE = SourceSpec("generator", "ecommerce", {"seed": 1, "scale": 150})


def _materialize(root: Path, quiz: QuizConfig):
    defs = [*graph_snapshot_asset("shop", SOURCE), *qa_candidates_asset("shop", quiz)]
    with dg.DagsterInstance.ephemeral() as instance:
        return dg.materialize(
            defs,
            resources=pipeline_resources(str(root)),
            instance=instance,
        )


def _meta(result, name: str):
    (mat,) = [
        e.event_specific_data.materialization
        for e in result.get_asset_materialization_events()
        if e.asset_key.path[-1] == name
    ]
    return mat.metadata


def test_qa_candidates_are_written_recorded_and_chained_to_the_snapshot(tmp_path: Path) -> None:
    result = _materialize(tmp_path, QuizConfig(template_n=12, llm_n=0, seed=3))
    assert result.success
    snap, meta = _meta(result, "graph_snapshot"), _meta(result, "qa_candidates")
    assert meta["parents"].value == [snap["fingerprint"].value] and meta["layer"].value == "qa_candidates"
    path = Path(meta["path"].value)
    cands = read_candidates(path)
    assert len(cands) == 12 == meta["candidates"].value
    assert all(c.quizzer == "template" for c in cands)
    assert meta["ok"].value == sum(c.ok for c in cands) >= 10
    assert all(c.evidence for c in cands if c.ok)  # executed, registered evidence
    rec = Catalog(tmp_path / "catalog.duckdb").latest("qa_candidates", "shop")
    assert rec.parents == (snap["fingerprint"].value,) and rec.path == str(path)
    assert "| template |" in meta["preview"].value and meta["reused"].value is False


def test_same_seed_is_deterministic_and_a_rerun_reuses_the_artifact(tmp_path: Path) -> None:
    quiz = QuizConfig(template_n=6, llm_n=0, seed=5)
    a = _meta(_materialize(tmp_path / "a", quiz), "qa_candidates")
    b = _meta(_materialize(tmp_path / "b", quiz), "qa_candidates")
    ra, rb = read_candidates(a["path"].value), read_candidates(b["path"].value)
    assert [(c.id, c.question, c.answer) for c in ra] == [(c.id, c.question, c.answer) for c in rb]
    path = Path(a["path"].value)
    mtime = path.stat().st_mtime_ns
    again = _meta(_materialize(tmp_path / "a", quiz), "qa_candidates")
    assert again["fingerprint"].value == a["fingerprint"].value
    assert path.stat().st_mtime_ns == mtime and again["reused"].value is True  # reused, not regenerated


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from components.llm.models import tiny_random_model

    return tiny_random_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


def test_llm_quizzer_failures_are_recorded_not_raised(tmp_path: Path, tiny_model: Path) -> None:
    quiz = QuizConfig(
        template_n=0,
        llm_n=2,
        seed=0,
        backend_options={"model_dir": str(tiny_model), "threads": 1},
        llm={"max_turns": 1, "max_new_tokens": 24},
    )
    result = _materialize(tmp_path, quiz)
    assert result.success
    meta = _meta(result, "qa_candidates")
    cands = read_candidates(meta["path"].value)
    assert [c.quizzer for c in cands] == ["llm", "llm"]
    assert all(c.failure_reason for c in cands if not c.ok)
    assert all(c.completion_tokens > 0 for c in cands)
    assert meta["llm_tokens_per_s"].value > 0
