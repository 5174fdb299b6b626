"""``graphdojo demo`` / ``materialize`` as a user runs them, on the real pipeline (cpu-tiny model,
embedded graph, a domain file from outside the package): a progress line per asset, a summary
that fits on a screen, the full Dagster event log in a file, ``--verbose`` and ``--json``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_lab_domain

ROOT = Path(__file__).resolve().parents[2]
EXE = Path(sys.executable).parent / "graphdojo"
ASSETS = [
    "graph_snapshot",
    "qa_candidates",
    "certified_dataset",
    "curriculum_splits",
    "checkpoints",
    "graphcert_rft",
    "graphcert_grpo",
    "graphdancer_rl",
    "preference_pairs",
    "graphdancer_dpo",
    "ablations",
    "eval_reports",
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("demo")
    domain_file = write_lab_domain(tmp / "my_graphs") / "lab.yaml"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPHDOJO_", "DAGSTER_HOME"))}
    env.update({"GRAPHDOJO_DATA": str(tmp / "data"), "OMP_NUM_THREADS": "1"})
    return domain_file, env


def _graphdojo(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(EXE), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)


def test_the_demo_prints_progress_and_a_summary_and_logs_everything(lab: tuple[Path, dict[str, str]]) -> None:
    domain_file, env = lab
    proc = _graphdojo(env, "demo", "--domain-file", str(domain_file))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout == ""  # people read stderr; --json is for scripts
    lines = proc.stderr.splitlines()
    # one screen: 13 assets × a start and an end line, then the summary (12 rows with GraphDancer's
    # Graph-CoT warm start, one difference line per trained row)
    assert len(lines) <= 52, proc.stderr
    for asset in ASSETS:  # a start line and an end line with seconds, per asset
        assert f"  … lab/{asset}" in lines
        assert any(re.match(rf"  ✓ lab/{asset} +\d+\.\d s", line) for line in lines), asset
    text = proc.stderr
    assert re.search(r"✓ lab/graph_snapshot .* \d[\d,]* nodes, [\d,]+ relationships", text)
    assert re.search(r"✓ lab/certified_dataset .* \d+ of 12 admitted", text)
    assert re.search(r"✓ lab/checkpoints .* loss [\d.]+ → [\d.]+", text)
    assert "not trained (0 preference pairs)" in text  # a random tiny policy gives uniform pools
    assert re.search(r"^lab: ok — 13 assets \(0 reused\) in \d+ s, checks 7/7 passed$", text, re.M)
    # rows without numbers share one line (the report says why each has none)
    assert re.search(
        r"^    no numbers \(not trained or not evaluated; the report says why\): .*graphdancer-rl→dpo", text, re.M
    )
    assert "funnel: candidates 12 → hard_failure" in text and "→ admitted" in text
    assert re.search(
        r"^    graphcert-grpo +\d\.\d{3} \[\d\.\d\d, \d\.\d\d\] +\d\.\d{3} \[", text, re.M
    )  # EM, F1 with CIs
    # correct answers per type, and (in brackets) how many were read off the system's own results
    assert re.search(r"^    sft-only .*correct \(grounded\): .*(yes/no|num|ent|set) \d+/\d+ \(\d+\)", text, re.M)
    report = Path(re.search(r"^  report: (\S+)$", text, re.M).group(1))
    log = Path(re.search(r"^  event log: (\S+)$", text, re.M).group(1))
    assert report.name == "report.html" and report.is_file()
    assert log.parent == Path(env["GRAPHDOJO_DATA"]) / "logs"
    events = log.read_text()
    assert "STEP_START" in events and "ASSET_MATERIALIZATION" in events and "ASSET_CHECK_EVALUATION" in events
    assert " - DEBUG - " not in text and "STEP_START" not in text  # Dagster's event log is not on the console


def test_verbose_puts_the_event_log_back_and_json_reports_reuse(lab: tuple[Path, dict[str, str]]) -> None:
    domain_file, env = lab
    proc = _graphdojo(
        env,
        "materialize",
        "--domain-file",
        str(domain_file),
        "--asset",
        "graph_snapshot",
        "--asset",
        "qa_candidates",
        "--verbose",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert " - DEBUG - " in proc.stderr and "STEP_START" in proc.stderr
    assert re.search(r"✓ lab/qa_candidates .*\(reused\)", proc.stderr)  # the demo above made the same artifact
    (line,) = [json.loads(x) for x in proc.stdout.splitlines()]
    assert line["ok"] and line["materialized"] == ["lab/graph_snapshot", "lab/qa_candidates"]
    assert line["checks"] == {"lab/graph_snapshot:graph_non_empty": True}


def test_an_unknown_domain_file_is_a_clear_error(lab: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    _, env = lab
    proc = _graphdojo(env, "demo", "--domain-file", str(tmp_path / "nowhere.yaml"))
    assert proc.returncode == 1
    err = json.loads(proc.stderr.splitlines()[-1])["error"]
    assert err["code"] == "bad_input" and "no such domain file" in err["message"]
