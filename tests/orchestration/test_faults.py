"""Faults, end to end through the ``graphdojo`` CLI on the real pipeline (cpu-tiny model, embedded
graph): a materialization killed midway leaves no partial artifact and no catalog row and the
next run completes; a full disk and an unwritable data folder are reported clearly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.store import Catalog
from components.store.atomic import STAGING_PREFIX
from tests.conftest import write_lab_domain

ROOT = Path(__file__).resolve().parents[2]
EXE = Path(sys.executable).parent / "graphdojo"
FRONT = ["graph_snapshot", "qa_candidates", "certified_dataset", "curriculum_splits", "checkpoints"]


def _env(tmp_path: Path, data: Path) -> dict[str, str]:
    domains = write_lab_domain(tmp_path / "domains")
    return {
        **os.environ,
        "GRAPHDOJO_DOMAINS_DIR": str(domains),
        "GRAPHDOJO_DOMAINS": "lab",
        "GRAPHDOJO_DATA": str(data),
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
        "OMP_NUM_THREADS": "1",
    }


def _materialize(env: dict[str, str], assets: list[str], *, prefix: tuple[str, ...] = ()) -> subprocess.Popen:
    args = [
        *prefix,
        str(EXE),
        "materialize",
        "--json",
        "--domain",
        "lab",
        *(a for name in assets for a in ("--asset", name)),
    ]
    return subprocess.Popen(
        args, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def _lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_a_materialization_killed_midway_leaves_nothing_partial_and_the_next_run_completes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = _env(tmp_path, data)
    proc = _materialize(env, FRONT)
    staging_root = data / "checkpoints" / "lab"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:  # wait until the training writes
        if staging_root.is_dir() and any(p.name.startswith(STAGING_PREFIX) for p in staging_root.iterdir()):
            break
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before it could be killed: " + proc.stderr.read()[-2000:]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    catalog = Catalog(data / "catalog.duckdb")
    assert catalog.latest("certified_dataset", "lab") is not None  # the layers before it landed
    assert catalog.latest("checkpoints", "lab") is None  # no catalog row …
    assert [p.name for p in staging_root.iterdir() if not p.name.startswith(STAGING_PREFIX)] == []  # … no artifact

    again = _materialize(env, FRONT)
    out, err = again.communicate(timeout=900)
    assert again.returncode == 0, err[-3000:]
    (line,) = _lines(out)
    assert line["ok"] and line["materialized"] == sorted(f"lab/{a}" for a in FRONT)
    rec = catalog.latest("checkpoints", "lab")
    folder = Path(rec.path)
    assert (folder / "README.md").is_file() and (folder / "config.json").is_file()
    assert [p.name for p in staging_root.iterdir()] == [folder.name]  # the dead run's staging was swept


def _tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    return (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
        ).returncode
        == 0
    )


def test_a_full_disk_is_reported_clearly_and_leaves_no_partial_artifact(tmp_path: Path) -> None:
    data = tmp_path / "data"
    if not _tmpfs(data, "256k"):
        pytest.skip("cannot mount a small tmpfs here (needs root or CAP_SYS_ADMIN)")
    try:
        proc = _materialize(_env(tmp_path, data), ["graph_snapshot"])
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 1
        text = out + err
        assert "disk is full" in text or "No space left" in text, text[-3000:]
        (line,) = _lines(out)
        assert not line["ok"] and "disk is full" in json.dumps(line["errors"])
        graphs = data / "graphs" / "lab"
        assert not graphs.exists() or [p for p in graphs.iterdir() if not p.name.startswith(STAGING_PREFIX)] == []
        catalog = data / "catalog.duckdb"
        assert not catalog.exists() or Catalog(catalog).latest("graph_snapshot", "lab") is None
    finally:
        subprocess.run(["umount", str(data)], capture_output=True)


def test_an_unwritable_data_folder_is_reported_clearly(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    os.chmod(data, 0o555)
    # root ignores file modes: drop the capability that lets it (util-linux setpriv)
    prefix = (
        ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search")
        if os.geteuid() == 0
        else ()
    )
    try:
        proc = _materialize(_env(tmp_path, data), ["graph_snapshot"], prefix=prefix)
        out, err = proc.communicate(timeout=600)
    finally:
        os.chmod(data, 0o755)
    text = out + err
    assert proc.returncode == 1, text[-3000:]
    assert "permission denied" in text.lower() and "GRAPHDOJO_DATA" in text, text[-3000:]
    assert list(data.iterdir()) == []
