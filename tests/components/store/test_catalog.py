"""The catalog under another process's lock: DuckDB admits one process per file, Dagster runs
steps in several, so an operation waits for the lock instead of failing the step."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from components.store.catalog import ArtifactRecord, Catalog, CatalogBusyError

_HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


def _hold_lock(path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_an_operation_waits_for_another_process_lock(tmp_path) -> None:
    catalog = Catalog(tmp_path / "catalog.duckdb")
    holder = _hold_lock(catalog.path, 1.5)
    try:
        start = time.monotonic()
        catalog.record(ArtifactRecord("graph_snapshot", "lab", "abc"))
        waited = time.monotonic() - start
    finally:
        holder.wait(timeout=30)
    assert waited > 0.5, "the record went in while another process held the file"
    assert catalog.latest("graph_snapshot", "lab").fingerprint == "abc"


def test_a_lock_held_too_long_is_a_clear_error(tmp_path) -> None:
    catalog = Catalog(tmp_path / "catalog.duckdb", lock_timeout=0.3)
    holder = _hold_lock(catalog.path, 5)
    try:
        with pytest.raises(CatalogBusyError, match="stayed locked by another process"):
            catalog.latest("graph_snapshot", "lab")
    finally:
        holder.kill()
        holder.wait()
    assert catalog.latest("graph_snapshot", "lab") is None
