"""The Makefile's set-up: each command installs what it needs and nothing more — `make demo` the
Python set-up only (no browser, no DVC), `make test` also DVC and the UI test's browser — and
`make setup` everything. Read from make's own plan (``-n``: print the recipes, run none; ``-B``: as
on a fresh machine, every set-up step due)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _plan(target: str) -> str:
    proc = subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    return proc.stdout


def test_the_demo_installs_no_browser_and_the_tests_do() -> None:
    demo, test, setup = _plan("demo"), _plan("test"), _plan("setup")
    assert "torch==2.13.0" in demo and "graphdojo demo" in demo
    assert "chromium" not in demo and "apt-get" not in demo and "dvc==" not in demo
    for plan in (test, setup):
        assert "torch==2.13.0" in plan and "chromium chromium-driver" in plan and "dvc==" in plan
    assert "pytest" in test


def test_every_set_up_step_is_idempotent() -> None:
    """Each installing step ends by touching its stamp (done once), and the browser step installs
    only what is missing."""
    makefile = (ROOT / "Makefile").read_text()
    for stamp in ("$(STAMP):", "$(DVC_STAMP):", "$(BROWSER_STAMP):"):
        recipe = makefile.split(stamp, 1)[1].split("\n\n", 1)[0]
        assert "touch $@" in recipe, stamp
    assert "command -v chromium" in makefile.split("$(BROWSER_STAMP):", 1)[1]
