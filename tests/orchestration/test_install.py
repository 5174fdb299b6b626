"""A regular (non-editable) install: the package runs from site-packages, the data root follows
the project the command runs in. Built as a wheel from this checkout and installed into a
scratch virtual environment that borrows only the third-party packages of this one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import write_lab_domain

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scratch venv's python, with graphdojo installed from a wheel."""
    tmp = tmp_path_factory.mktemp("install")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # third-party packages from this environment (a .pth adds the folder, not the editable hook inside it)
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheels = tmp / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = wheels.glob("graphdojo-*.whl")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    return python


def _run(python: Path, cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("GRAPHDOJO_DATA", "DAGSTER_HOME", "PYTHONPATH")}
    return subprocess.run(
        [str(python), *args], cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True, timeout=900
    )


def test_the_installed_package_keeps_its_data_in_the_project(installed: Path, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text('[project]\nname = "my-graph"\n\n[tool.graphdojo]\ndata_root = "store"\n')
    where = _run(
        installed,
        proj,
        "-c",
        "import components, json; from components.store import data_root; "
        "print(json.dumps([components.__file__, str(data_root())]))",
    )
    assert where.returncode == 0, where.stderr
    package, root = json.loads(where.stdout)
    assert "site-packages" in package and not package.startswith(str(ROOT))  # not this checkout
    assert root == str(proj / "store")
    # the real pipeline's first layer, from the installed copy, with a domain file from anywhere
    domains = write_lab_domain(tmp_path / "mine")
    run = _run(
        installed,
        proj,
        "-m",
        "orchestration.cli",
        "materialize",
        "--domain-file",
        str(domains / "lab.yaml"),
        "--asset",
        "graph_snapshot",
        "--json",
    )
    assert run.returncode == 0, run.stderr[-3000:]
    line = json.loads(run.stdout.splitlines()[-1])
    assert line["ok"] and line["materialized"] == ["lab/graph_snapshot"]
    assert Path(line["log"]).parent == proj / "store" / "logs"
    assert [p.name for p in (proj / "store" / "graphs" / "lab").iterdir()]  # the snapshot landed in the project
    assert (proj / "store" / "dagster_home" / "dagster.yaml").is_file()  # and Dagster's instance beside it
    assert not (Path(package).parents[1] / "data").exists()  # nothing next to the installed package
    elsewhere = _run(installed, tmp_path, "-c", "from components.store import data_root; print(data_root())")
    assert elsewhere.stdout.strip() == str(tmp_path / "data")  # no project: the working directory
