"""The Dagster UI end to end in a real headless browser (Debian chromium + chromium-driver via
Selenium): ``dagster dev`` with its daemon serves the asset graph (groups per layer, asset
checks); a materialization launched from the UI succeeds. Screenshots go to
``test-artifacts/ui/``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from components.store import Catalog
from tests.conftest import write_lab_domain

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "ui"
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs Debian's chromium + chromium-driver (the test command's set-up, `make browser-setup`, installs them)",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, check: Callable[[], bool], timeout: float, log: Path | None = None, driver=None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:  # noqa: BLE001 - not there yet
            pass
        time.sleep(1.0)
    tail = log.read_text()[-4000:] if log and log.exists() else ""
    if driver is not None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(ARTIFACTS / f"timeout-{what.replace(' ', '-')}.png"))
        tail = driver.find_element("tag name", "body").text[-2000:] + "\n---\n" + tail
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{tail}")


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("ui")
    home = tmp / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    port = _free_port()
    env = {
        **os.environ,
        "GRAPHDOJO_DOMAINS_DIR": str(write_lab_domain(tmp / "domains")),
        "GRAPHDOJO_DOMAINS": "lab",
        "GRAPHDOJO_DATA": str(tmp / "data"),
        "DAGSTER_HOME": str(home),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "GRAPHDOJO_AUTOMATION": "off",  # only the UI launches runs here
        "OMP_NUM_THREADS": "1",
    }
    log = tmp / "dagster-dev.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "dagster"),
                "dev",
                "-m",
                "orchestration.definitions",
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
            ],
            cwd=ROOT,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait(
            "the Dagster webserver",
            lambda: urllib.request.urlopen(f"{base}/server_info", timeout=5).status == 200,
            240,
            log,
        )
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for arg in (
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--disable-gpu",
            "--window-size=1600,1000",
        ):
            opts.add_argument(arg)
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        try:
            yield {"driver": driver, "base": base, "data": tmp / "data", "log": log}
        finally:
            driver.quit()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def _page_text(driver) -> str:
    return driver.find_element("tag name", "body").text


def _shot(driver, name: str) -> Path:
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def _dismiss_welcome(driver) -> None:
    """The first visit shows a 'Join the Dagster community' dialog: skip it."""
    from selenium.webdriver.common.by import By

    for button in driver.find_elements(By.XPATH, "//button[normalize-space(.)='Skip']"):
        button.click()


def test_the_ui_serves_the_asset_graph_with_layer_groups_and_checks(ui) -> None:
    from selenium.webdriver.common.by import By

    driver = ui["driver"]
    driver.get(f"{ui['base']}/asset-groups")
    layers = ["graph", "generation", "certification", "training", "evaluation"]
    _wait("the layer groups", lambda: all(g in _page_text(driver) for g in layers), 180, ui["log"], driver)
    time.sleep(2)
    _dismiss_welcome(driver)
    assert _shot(driver, "01-asset-graph-groups").stat().st_size > 10_000
    driver.get(f"{ui['base']}/locations/orchestration.definitions/asset-groups/training")
    _dismiss_welcome(driver)
    training = [
        "checkpoints",
        "graphcert_rft",
        "graphcert_grpo",
        "graphdancer_rl",
        "graphdancer_dpo",
        "preference_pairs",
        "ablations",
    ]
    _wait("the training group's asset graph", lambda: "checkpoints" in _page_text(driver), 120, ui["log"], driver)
    time.sleep(2)
    _shot(driver, "02-training-group-graph")
    # the graph draws only the nodes in view; the group's List tab names every member
    driver.find_element(By.XPATH, "//*[normalize-space(.)='List' and (self::a or self::button)]").click()
    _wait(
        "the training group's asset list",
        lambda: all(a in _page_text(driver) for a in training),
        120,
        ui["log"],
        driver,
    )
    driver.get(f"{ui['base']}/assets/lab/certified_dataset?view=checks")
    _wait(
        "the certification checks",
        lambda: all(c in _page_text(driver) for c in ("admitted_nonzero", "no_leakage")),
        120,
        ui["log"],
        driver,
    )
    _shot(driver, "03-asset-checks")


def test_a_materialization_launched_from_the_ui_succeeds(ui) -> None:
    from selenium.webdriver.common.by import By

    driver = ui["driver"]
    driver.get(f"{ui['base']}/assets/lab/graph_snapshot")
    _dismiss_welcome(driver)
    button = "//button[normalize-space(.)='Materialize']"
    _wait("the Materialize button", lambda: driver.find_element(By.XPATH, button).is_enabled(), 120, ui["log"], driver)
    _shot(driver, "04-asset-page")
    driver.find_element(By.XPATH, button).click()
    catalog = ui["data"] / "catalog.duckdb"
    _wait(
        "the launched run to record its snapshot",
        lambda: catalog.exists() and Catalog(catalog).latest("graph_snapshot", "lab") is not None,
        300,
        ui["log"],
        driver,
    )
    driver.get(f"{ui['base']}/runs")
    _wait(
        "the run to show Success in the runs list",
        lambda: driver.refresh() or "Success" in _page_text(driver),
        180,
        ui["log"],
        driver,
    )
    _shot(driver, "05-run-succeeded")
    driver.get(f"{ui['base']}/assets/lab/graph_snapshot")
    _wait("the materialization's metadata", lambda: "fingerprint" in _page_text(driver), 60, ui["log"], driver)
    _shot(driver, "06-materialized-asset")
    rec = Catalog(catalog).latest("graph_snapshot", "lab")
    assert rec.metadata["parts"] and json.dumps(rec.row_counts)
