"""The training layer end to end on the real graph, sandbox and a real tiny model (cpu-tiny):
curriculum splits, then a warm-start checkpoint with its model card."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
from transformers import AutoModelForCausalLM

from assets.certification import certified_dataset_asset
from assets.generation import qa_candidates_asset
from assets.graph import graph_snapshot_asset
from assets.resources import ArtifactStore, GraphBackendResource
from assets.training import checkpoints_asset, curriculum_splits_asset, preference_pairs_asset
from components.certify.dataset import CertifyConfig
from components.graph.snapshot import SourceSpec
from components.quizzer.run import QuizConfig
from components.training.checkpoint import TrainConfig

SOURCE = SourceSpec("generator", "biomedical", {"seed": 3, "scale": 200})


def test_checkpoint_from_the_training_split(tmp_path: Path) -> None:
    defs = [*graph_snapshot_asset("bio", SOURCE), *qa_candidates_asset("bio", QuizConfig(template_n=16, llm_n=0, seed=2)),
            *certified_dataset_asset("bio", CertifyConfig(fault_sample=0)), *curriculum_splits_asset("bio"),
            *checkpoints_asset("bio", TrainConfig(preset="cpu-tiny", max_steps=6, threads=1)),
            *preference_pairs_asset("bio", TrainConfig(preset="cpu-tiny", max_steps=6, threads=1))]
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize(defs, resources={"store": ArtifactStore(data_root=str(tmp_path)),
                                                 "graph": GraphBackendResource()}, instance=instance)
    assert result.success
    (mat,) = [e.event_specific_data.materialization for e in result.get_asset_materialization_events()
              if e.asset_key.path[-1] == "checkpoints"]
    meta = mat.metadata
    folder = Path(meta["path"].value)
    assert meta["examples"].value > 0 and meta["last_loss"].value < meta["first_loss"].value
    assert (folder / "config.json").is_file() and (folder / "README.md").is_file()
    card = (folder / "README.md").read_text()
    assert "Data fingerprint" in card and "cpu-tiny" in card and "environment tokens masked" in card
    log = json.loads((folder / "training_log.json").read_text())
    assert len(log["losses"]) == 6
    AutoModelForCausalLM.from_pretrained(folder)  # a loadable Hugging Face folder
    assert "step   1" in meta["loss_curve"].value
    (pm,) = [e.event_specific_data.materialization for e in result.get_asset_materialization_events()
             if e.asset_key.path[-1] == "preference_pairs"]
    pairs = pm.metadata
    # a random tiny model never answers: every pool is uniformly failed, so no pair is kept
    assert pairs["questions"].value == 3 and pairs["trajectories"].value == 24 and pairs["pairs"].value == 0
    assert {r.data["reason"]: r.data["count"] for r in pairs["dropped"].value.records} == {"uniformly_failed": 3}


def test_train_config_validation() -> None:
    assert TrainConfig.from_dict({"preset": "cpu-demo"}).resolved()["max_steps"] == 6
    assert TrainConfig.from_dict({"preset": "cpu-tiny", "max_steps": 3}).resolved()["max_steps"] == 3
    with pytest.raises(ValueError, match="preset"):
        TrainConfig.from_dict({"preset": "tpu"})
    with pytest.raises(ValueError, match="model_dir"):
        TrainConfig.from_dict({"preset": "gpu"})
    with pytest.raises(ValueError, match="unknown train options"):
        TrainConfig.from_dict({"epochs": 3})
