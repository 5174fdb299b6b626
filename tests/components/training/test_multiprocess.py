"""Training launched as several processes (``accelerate launch``, 2 CPU processes over gloo):
the same run as one process, and only the main process writes. Each case runs
``multiprocess_run.py`` on the tiny model — once plainly, once under ``accelerate launch`` — with
the same global batch, in float32.

Tolerances (float32; the two runs reduce in different orders): the logged curves agree within
1e-4 relative (GRPO's loss, ≈ 1e-7 at these steps, within 1e-6 absolute), and the saved weights
within 1e-4 absolute while training moved them by more than 1e-3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

from components.store import Catalog
from tests.conftest import accelerate_launch

SCRIPT = Path(__file__).with_name("multiprocess_run.py")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The tiny model and the library graph (built once: the processes share them read-only)."""
    from components.graph.load import load_graph
    from components.llm.models import tiny_random_model
    from tests.components.tools.test_graph_cot import library_graph

    root = tmp_path_factory.mktemp("multiprocess")
    load_graph(library_graph(), root / "db")
    return tiny_random_model(root / "model", seed=0), root / "db"


def _run(mode: str, processes: int, tiny: tuple[Path, Path], folder: Path) -> list[dict]:
    """Every process's report of one run (rank order)."""
    model, db = tiny
    args = [mode, str(model), str(db), str(folder / "data"), str(folder / "report")]
    prefix = [sys.executable] if processes == 1 else accelerate_launch(processes)
    command = [*prefix, str(SCRIPT), *args]
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    reports = [json.loads((folder / f"report.{r}.json").read_text()) for r in range(processes)]
    assert [r["world"] for r in reports] == [processes] * processes
    return reports


def _close(a: list[float], b: list[float], rel: float = 1e-4, abs_: float = 1e-6) -> bool:
    return len(a) == len(b) and all(x == pytest.approx(y, rel=rel, abs=abs_) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("mode", ["sft", "lora", "grpo"])
def test_two_processes_train_like_one_and_only_the_main_one_writes(
    mode: str, tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    (one,) = _run(mode, 1, tiny, tmp_path / "one")
    main, other = _run(mode, 2, tiny, tmp_path / "two")

    # the same run: the logged curves (GRPO: the rewards of the same sampled episodes, the KL of
    # the same updates) and the saved weights
    assert main["fingerprint"] == one["fingerprint"]
    for key, curve in one["summary"].items():
        assert _close(main["summary"][key], curve), (key, main["summary"][key], curve)
    if mode == "grpo":
        assert len(one["summary"]["rewards"]) == 3 and one["summary"]["kl"][-1] > 0
    mine = load_file(Path(main["path"]) / "model" / "model.safetensors")
    theirs = load_file(Path(one["path"]) / "model" / "model.safetensors")
    start = load_file(tiny[0] / "model.safetensors")
    assert set(mine) == set(theirs) == set(start)  # LoRA: merged into a plain folder
    assert max((mine[k] - start[k]).abs().max().item() for k in mine) > 1e-3
    assert max((mine[k] - theirs[k]).abs().max().item() for k in mine) < 1e-4
    model = AutoModelForCausalLM.from_pretrained(Path(main["path"]) / "model")  # the checkpoint loads
    assert torch.isfinite(model(torch.tensor([[5, 6, 7]])).logits).all()

    # only the main process wrote: one folder (no other process's staging left), one catalog
    # row, built by rank 0; the other process was handed the main process's artifact
    assert main["main"] and not other["main"]
    assert other["path"] == main["path"] and other["fingerprint"] == main["fingerprint"]
    assert main["built_by"] == other["built_by"] == "0"
    data = tmp_path / "two" / "data"
    assert [p.name for p in (data / "mp_train" / "tiny").iterdir()] == [main["fingerprint"]]
    rows = Catalog(data / "catalog.duckdb").history("mp_train", "tiny")
    assert [r.fingerprint for r in rows] == [main["fingerprint"]]


def test_a_launch_of_n_processes_splits_the_global_batch_or_says_why_not(
    monkeypatch: pytest.MonkeyPatch, tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    """What a process reads from the launcher's environment: its share of the batch (a batch that
    does not split is a clear error), whether it writes; PPO's own loop, which has no gradient
    synchronisation, refuses to run as one of several processes instead of training copies."""
    from components.store.ranks import from_main, is_main_process, world_size
    from components.training._common import per_process
    from components.training.ppo import run_ppo

    assert (world_size(), is_main_process(), per_process(4), from_main("mine")) == (1, True, 4, "mine")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    assert (world_size(), is_main_process(), per_process(4)) == (2, False, 2)
    with pytest.raises(ValueError, match="does not split over 2 processes"):
        per_process(3)
    with pytest.raises(ValueError, match="trains in one process"):
        run_ppo(tiny[0], [{"question": "q", "answer": "a"}], lambda c, **k: [0.0] * len(c), dict, tmp_path / "out")
    assert not (tmp_path / "out").exists()
