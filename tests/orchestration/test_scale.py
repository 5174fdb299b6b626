"""The scale-out configs (orchestration/scale/, docs/scale.md) are valid for the tools that read
them: the Kubernetes executor's run config and instance config against dagster-k8s's schemas, the
accelerate / DeepSpeed config through accelerate, the Neo4j-cluster domain through the domain
loader, vLLM server mode through TRL's GRPOConfig; and ``graphdojo materialize`` launched as two
CPU processes by ``accelerate launch`` trains one checkpoint that only the main process records.
(The Neo4j backend contract suite runs against NEO4J_URI in
tests/components/graph/test_backend_contract.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml

from components.store import Catalog
from components.training.checkpoint import TrainConfig
from components.training.grpo import GRPORunConfig, grpo_args
from orchestration.definitions import build_definitions, executor_from_env
from orchestration.domains import load_domains
from tests.conftest import accelerate_launch, write_lab_domain

ROOT = Path(__file__).resolve().parents[2]
SCALE = ROOT / "orchestration" / "scale"


def test_the_k8s_executor_accepts_the_run_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GRAPHDOJO_EXECUTOR", "k8s")
    monkeypatch.setenv("GRAPHDOJO_DOMAINS", "academic")
    defs = build_definitions(load_domains(), data_root=str(tmp_path))
    job = defs.resolve_job_def("academic_pipeline")
    assert job.executor_def.name == "k8s"
    run_config = yaml.safe_load((SCALE / "dagster" / "k8s_run_config.yaml").read_text())
    validated = dg.validate_run_config(job, run_config)
    assert validated["execution"]["k8s"]["job_namespace"] == "graphdojo"
    broken = {"execution": {"config": {**run_config["execution"]["config"], "max_concurent": 3}}}
    with pytest.raises(dg.DagsterInvalidConfigError, match="max_concurent"):
        dg.validate_run_config(job, broken)


def test_executor_choice_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHDOJO_EXECUTOR", "multiprocess")
    assert executor_from_env() is dg.multiprocess_executor
    monkeypatch.setenv("GRAPHDOJO_EXECUTOR", "ray")
    with pytest.raises(ValueError, match="in_process, multiprocess, k8s"):
        executor_from_env()


def test_the_k8s_instance_config_resolves_its_run_launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster._core.instance.config import dagster_instance_config
    from dagster_k8s import K8sRunLauncher

    (tmp_path / "dagster.yaml").write_text((SCALE / "dagster" / "dagster.yaml").read_text())
    monkeypatch.setenv("DAGSTER_PG_USER", "u")
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "p")
    config, _ = dagster_instance_config(str(tmp_path))
    assert config["run_launcher"]["class"] == "K8sRunLauncher"
    assert K8sRunLauncher.config_type()  # the class the config names exists in the installed dagster-k8s
    assert config["run_coordinator"]["config"]["max_concurrent_runs"] == 4


def test_the_accelerate_deepspeed_config_loads() -> None:
    from accelerate.commands.config.config_args import load_config_from_file

    cfg = load_config_from_file(str(SCALE / "accelerate" / "deepspeed_zero3.yaml"))
    assert str(cfg.distributed_type).endswith("DEEPSPEED") and cfg.num_processes == 8
    assert cfg.deepspeed_config["zero_stage"] == 3 and str(cfg.mixed_precision).endswith("bf16")


def test_the_neo4j_cluster_domain_and_vllm_server_mode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GRAPHDOJO_DOMAINS", raising=False)
    domains = load_domains(extra_dirs=str(SCALE / "domains"))
    cfg = domains["papers_neo4j"]
    assert cfg.source.format == "neo4j" and cfg.source.src.startswith("neo4j://")
    assert cfg.source.options["database"] == "papers" and "password" not in cfg.source.options
    assert cfg.train.vllm_mode == "server" and len(cfg.ablations) == 4
    run = GRPORunConfig(
        batch_size=8,
        num_generations=8,
        use_vllm=True,
        vllm_mode=cfg.train.vllm_mode,
        vllm_server_url=cfg.train.vllm_server_url,
    )
    args = grpo_args(run, tmp_path)
    assert args.use_vllm and args.vllm_mode == "server"
    assert args.vllm_server_base_url == "http://vllm-rollouts.graph.svc.cluster.local:8000"
    with pytest.raises(ValueError, match="gpu preset"):
        TrainConfig(preset="cpu-demo", vllm_mode="server", vllm_server_url="http://x:8000")
    with pytest.raises(ValueError, match="needs vllm_server_url"):
        TrainConfig(preset="gpu", model_dir="/m", vllm_mode="server")


def test_materialize_launched_as_two_processes_records_one_run_and_one_checkpoint(tmp_path: Path) -> None:
    """``accelerate launch`` (2 CPU processes, gloo) of ``graphdojo materialize --asset checkpoints``
    on the lab domain (cpu-tiny), its upstream materialized by one process first: both processes
    train, one checkpoint folder lands with one catalog row, the persistent Dagster instance
    records one run for it (the other process's is ephemeral) and one JSON line is printed."""
    env = {
        **os.environ,
        "GRAPHDOJO_DOMAINS_DIR": str(write_lab_domain(tmp_path / "domains")),
        "GRAPHDOJO_DOMAINS": "lab",
        "GRAPHDOJO_DATA": str(tmp_path / "data"),
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
        "OMP_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",
    }
    cli = ["-m", "orchestration.cli", "materialize", "--json", "--domain", "lab"]
    front = [
        a for n in ("graph_snapshot", "qa_candidates", "certified_dataset", "curriculum_splits") for a in ("--asset", n)
    ]
    done = subprocess.run(
        [sys.executable, *cli, *front], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    launch = accelerate_launch(2)
    done = subprocess.run(
        [*launch, *cli, "--asset", "checkpoints"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1 and lines[0]["ok"] and lines[0]["materialized"] == ["lab/checkpoints"]
    assert done.stderr.count("lab: ok") == 2  # both processes ran the selection

    rows = Catalog(tmp_path / "data" / "catalog.duckdb").history("checkpoints", "lab")
    assert len(rows) == 1 and Path(rows[0].path).is_dir() and rows[0].metadata["losses"]
    assert [p.name for p in (tmp_path / "data" / "checkpoints" / "lab").iterdir()] == [rows[0].fingerprint]
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        runs = instance.get_runs()
    assert len(runs) == 2 and lines[0]["run_id"] in {r.run_id for r in runs}
