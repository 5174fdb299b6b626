"""Damaged databases are refused on open — before any query, sandbox episode or certification."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from components.graph.errors import DamagedDatabaseError
from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from tests.conftest import contract_graph


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    path = tmp_path / "db"
    load_graph(contract_graph(), path)
    return path


def _refused(path: Path, what: str) -> str:
    with pytest.raises(DamagedDatabaseError, match=what) as err:
        LadybugBackend(path)
    assert str(path) in str(err.value) and "re-import" in str(err.value)
    return str(err.value)


def test_the_import_records_sizes_times_and_digests(db: Path) -> None:
    manifest = json.loads((db / "import.json").read_text())
    entry = manifest["files"]["graph.lbug"]
    assert entry["size"] == (db / "graph.lbug").stat().st_size and len(entry["sha256"]) == 64
    assert manifest["nodes"] == contract_graph().node_count
    with LadybugBackend(db) as b:  # opening read-only changes nothing
        assert b.run("MATCH (n) RETURN count(n) AS n").rows == ((7,),)
    assert (db / "graph.lbug").stat().st_mtime_ns == entry["mtime_ns"]


def test_truncated_empty_garbled_and_replaced_files(db: Path, tmp_path: Path) -> None:
    f = db / "graph.lbug"
    good = f.read_bytes()
    f.write_bytes(good[: len(good) // 3])
    _refused(db, "bytes, its import wrote")
    f.write_bytes(b"")
    _refused(db, "0 bytes")
    garbled = bytearray(good)
    garbled[len(good) // 2] ^= 0xFF
    f.write_bytes(bytes(garbled))
    _refused(db, "not the file its import wrote")
    other = tmp_path / "other"
    g = contract_graph()
    g.add_node("City", "rome", {"name": "Rome", "population": 2800000})
    load_graph(g, other)
    if (other / "graph.lbug").stat().st_size == len(good):
        shutil.copy(other / "graph.lbug", f)
        _refused(db, "not the file its import wrote")
    f.write_bytes(good)  # the same bytes back (a copy, new time): fine again
    with LadybugBackend(db) as b:
        assert b.run("MATCH (n) RETURN count(n) AS n").rows == ((7,),)


def test_a_garbled_manifest_and_a_legacy_folder(db: Path) -> None:
    (db / "import.json").write_text("{not json")
    _refused(db, "unreadable")
    (db / "import.json").write_text(json.dumps({"nodes": 7}))  # an older import: no file records
    with LadybugBackend(db) as b:
        assert b.run("MATCH (n) RETURN count(n) AS n").rows == ((7,),)
    (db / "graph.lbug").write_bytes(b"")
    _refused(db, "empty")


def test_a_valid_reimport_is_not_damage(db: Path) -> None:
    g = contract_graph()
    g.add_node("City", "rome", {"name": "Rome", "population": 2800000})
    load_graph(g, db, overwrite=True)
    with LadybugBackend(db) as b:
        assert b.run("MATCH (n) RETURN count(n) AS n").rows == ((8,),)


def test_the_cli_and_the_sandbox_refuse_a_damaged_database(db: Path, tmp_path: Path, capsys) -> None:
    from orchestration.cli import main

    (db / "graph.lbug").write_bytes(b"")
    code_file = tmp_path / "c.py"
    code_file.write_text("print(cypher('MATCH (n) RETURN count(n) AS n').rows)")
    for argv in (
        ["graph", "query", "--db", str(db), "--query", "MATCH (n) RETURN count(n)"],
        ["sandbox", "run", "--db", str(db), "--code", str(code_file)],
    ):
        capsys.readouterr()
        assert main(argv) == 1
        out, err = capsys.readouterr()
        assert out == "" and json.loads(err)["error"]["code"] == "damaged_database"
    os.utime(db / "graph.lbug")
