"""Artifacts land whole or not at all; storage failures are clear (real files, real processes)."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from components.store import ArtifactRecord, Catalog
from components.store.atomic import STAGING_PREFIX, StorageError, as_storage_error, staged_dir, sweep_staging


def test_a_staged_folder_lands_whole_and_replaces_an_old_copy(tmp_path: Path) -> None:
    final = tmp_path / "layer" / "fp"
    final.mkdir(parents=True)
    (final / "stale.txt").write_text("from an older, incomplete attempt")
    with staged_dir(final) as tmp:
        assert tmp.parent == final.parent and tmp.name.startswith(STAGING_PREFIX)
        (tmp / "a.txt").write_text("a")
        (tmp / "sub").mkdir()
        (tmp / "sub" / "b.txt").write_text("b")
        assert not (final / "a.txt").exists()  # invisible until the block ends
    assert sorted(p.name for p in final.iterdir()) == ["a.txt", "sub"]
    assert (final / "sub" / "b.txt").read_text() == "b"
    assert [p.name for p in final.parent.iterdir()] == ["fp"]  # no staging or old copy left


def test_a_failure_inside_the_block_leaves_the_previous_artifact_intact(tmp_path: Path) -> None:
    final = tmp_path / "fp"
    final.mkdir()
    (final / "good.txt").write_text("good")
    with pytest.raises(RuntimeError, match="boom"):
        with staged_dir(final) as tmp:
            (tmp / "half.txt").write_text("half")
            raise RuntimeError("boom")
    assert [p.name for p in tmp_path.iterdir()] == ["fp"]
    assert [p.name for p in final.iterdir()] == ["good.txt"]


_KILLED_WRITER = """
import sys, time
from pathlib import Path
from components.store.atomic import staged_dir
with staged_dir(Path(sys.argv[1])) as tmp:
    (tmp / "part-0").write_text("x" * 1000)
    print("writing", flush=True)
    time.sleep(60)
    (tmp / "part-1").write_text("never")
"""


def test_a_writer_killed_midway_leaves_no_artifact_and_its_staging_is_swept(tmp_path: Path) -> None:
    final = tmp_path / "fp"
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(final)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert proc.stdout.readline().strip() == "writing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    left = [p.name for p in tmp_path.iterdir()]
    assert not final.exists() and len(left) == 1 and left[0].startswith(f"{STAGING_PREFIX}{proc.pid}-")
    own = tmp_path / f"{STAGING_PREFIX}{os.getpid()}-x"
    with staged_dir(tmp_path / "other") as tmp:  # our own live staging entry survives a sweep
        assert sweep_staging(tmp_path) == [] and tmp.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["other"]  # the dead writer's folder was swept
    assert not own.exists()


def test_disk_full_is_a_storage_error_that_says_so(tmp_path: Path) -> None:
    with pytest.raises(OSError) as info:
        with open("/dev/full", "w") as fh:
            fh.write("x" * 10_000)
            fh.flush()
    err = as_storage_error(info.value, tmp_path / "candidates.parquet")
    assert isinstance(err, StorageError) and err.errno == errno.ENOSPC
    assert "disk is full" in str(err) and "candidates.parquet" in str(err)
    assert as_storage_error(ValueError("not storage")) is None
    ro = as_storage_error(duckdb.IOException('Cannot open file "x": Read-only file system'), "catalog.duckdb")
    assert ro is not None and ro.errno == errno.EROFS


def test_a_full_disk_while_staging_removes_the_partial_folder(tmp_path: Path) -> None:
    final = tmp_path / "fp"
    with pytest.raises(StorageError, match="disk is full"):
        with staged_dir(final) as tmp:
            (tmp / "part").write_text("x")
            with open("/dev/full", "w") as fh:  # the real ENOSPC, raised inside the block
                fh.write("y" * 10_000)
                fh.flush()
    assert list(tmp_path.iterdir()) == []


_AS_NOBODY = """
import os, sys
from components.store import Catalog
from components.store.atomic import StorageError
import duckdb, datetime, json  # the interpreter's files may not be readable by nobody
os.setgid(65534); os.setuid(65534)
try:
    Catalog(sys.argv[1]).latest("a", "d")
except StorageError as exc:
    print("STORAGE", exc.errno, exc)
"""


@pytest.mark.skipif(not hasattr(os, "setuid"), reason="POSIX only")
def test_an_unwritable_catalog_is_a_clear_permission_error(tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()
    Catalog(root / "catalog.duckdb").record(ArtifactRecord("a", "d", "f1"))
    os.chmod(root, 0o555)
    os.chmod(root / "catalog.duckdb", 0o444)
    os.chmod(tmp_path, 0o755)
    try:
        if os.geteuid() == 0:  # root ignores modes: run the reader as nobody
            proc = subprocess.run(
                [sys.executable, "-c", _AS_NOBODY, str(root / "sub" / "catalog.duckdb")],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=Path(__file__).resolve().parents[3],
            )
            out = proc.stdout + proc.stderr
        else:
            try:
                Catalog(root / "sub" / "catalog.duckdb")
                out = "no error"
            except StorageError as exc:
                out = f"STORAGE {exc.errno} {exc}"
        assert f"STORAGE {errno.EACCES}" in out, out
        assert "permission denied" in out and "GRAPHDOJO_DATA" in out
        assert Catalog(root / "catalog.duckdb").get("a", "d", "f1") is not None  # data intact
    finally:
        os.chmod(root, 0o755)
