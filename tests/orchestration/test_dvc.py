"""``dvc repro`` over the real pipeline: params.yaml agrees with the configured domains, every
stage's parameters exist, and — on a small domain, for real — changing a parameter re-runs
exactly the stages that read it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from orchestration.domains import default_domain, load_domains
from tests.conftest import write_lab_domain

ROOT = Path(__file__).resolve().parents[2]


def _dvc() -> str:
    local = ROOT / ".tools" / "dvc" / "bin" / "dvc"
    found = str(local) if local.is_file() else shutil.which("dvc")
    if found is None:
        pytest.fail("DVC is not installed: run `make dvc-setup` (the test command's set-up does)")
    return found


def test_params_name_exactly_the_configured_domains_and_their_sections() -> None:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    domains = load_domains()
    assert sorted(params["domains"]) == sorted(domains)
    assert params["default_domain"] == default_domain(domains)
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    sections = {"source", "quiz", "certify", "train", "eval", "ablations", "grit"}
    for name, stage in stages.items():
        body = stage.get("do", stage)
        for entry in body.get("params", []):
            for _file, keys in entry.items():
                assert set(keys) <= sections, (name, keys)
    for name, cfg in domains.items():  # DVC fails a stage whose parameter section is missing
        sections_here = set(yaml.safe_load(Path(cfg.path).read_text()))
        assert {"source", "quiz", "certify", "train", "ablations", "eval"} <= sections_here, name
    assert "grit" in yaml.safe_load(Path(domains[params["default_domain"]].path).read_text())
    listed = subprocess.run([_dvc(), "stage", "list"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == 11 * len(domains) + 2


def test_dvc_yaml_is_generated_from_the_layers_code_and_inputs() -> None:
    """dvc.yaml is what ``python -m orchestration.dvc`` writes: each stage's code deps are the
    files of its layers' code digests, its data deps the folders of its assets' inputs."""
    from components.store.digest import code_files
    from orchestration.dvc import LAYERS, main

    assert main(["--check"]) == 0, "dvc.yaml is stale: run `python -m orchestration.dvc`"
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    cert = stages["certification"]["do"]["deps"]
    assert [d for d in cert if d.startswith("data/")] == ["data/graphs/${item}", "data/qa_candidates/${item}"]
    assert [d for d in cert if d.startswith("components/")] == code_files(LAYERS["certified_dataset"].code_modules)
    assert "components/tools/_kernel.py" in cert  # run by the sandbox as a child process, not imported
    graphdancer = stages["graphdancer"]["do"]["deps"]
    assert set(code_files(LAYERS["preference_pairs"].code_modules)) <= set(graphdancer)


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A DVC project with this repo's dvc.yaml and code, and one small domain."""
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copy(ROOT / "dvc.yaml", proj / "dvc.yaml")
    shutil.copytree(ROOT / "components", proj / "components", ignore=shutil.ignore_patterns("__pycache__"))
    (proj / ".venv").symlink_to(ROOT / ".venv")
    (proj / "params.yaml").write_text("default_domain: lab\ndomains: [lab]\n")
    write_lab_domain(proj / "orchestration" / "domains")
    env = {
        **os.environ,
        "GRAPHDOJO_DOMAINS_DIR": str(proj / "orchestration" / "domains"),
        "GRAPHDOJO_DOMAINS": "lab",
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
        "OMP_NUM_THREADS": "1",
    }
    env.pop("GRAPHDOJO_DATA", None)
    subprocess.run([_dvc(), "init", "--no-scm", "-q"], cwd=proj, check=True, env=env, timeout=120)
    return proj, env


def _repro(proj: Path, env: dict[str, str]) -> list[str]:
    """``dvc repro evaluation@lab`` (the domain's whole chain); the stages it ran."""
    proc = subprocess.run(
        [_dvc(), "repro", "evaluation@lab"], cwd=proj, env=env, capture_output=True, text=True, timeout=1800
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return re.findall(r"Running stage '([^']+)'", proc.stdout)


def _edit(path: Path, old: str, new: str) -> None:
    """Change one line of the domain YAML as a user would (a YAML round trip would rewrite
    every section, e.g. ``judge: off`` → ``judge: false``)."""
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def test_changing_a_parameter_reruns_exactly_the_affected_stages(tmp_path: Path) -> None:
    proj, env = _project(tmp_path)
    chain = [
        "graph@lab",
        "generation@lab",
        "certification@lab",
        "curriculum@lab",
        "warm_start@lab",
        "rft@lab",
        "graphcert@lab",
        "graphdancer@lab",
        "ablations@lab",
        "dancer_ablations@lab",
        "evaluation@lab",
    ]
    assert sorted(_repro(proj, env)) == sorted(chain)
    lock = yaml.safe_load((proj / "dvc.lock").read_text())["stages"]
    assert set(lock) == set(chain)
    assert lock["evaluation@lab"]["params"]["orchestration/domains/lab.yaml"]["eval"]["samples"] == 1
    assert _repro(proj, env) == []  # nothing changed: nothing runs

    domain = proj / "orchestration" / "domains" / "lab.yaml"
    _edit(domain, "eval: {samples: 1,", "eval: {samples: 2,")
    assert _repro(proj, env) == ["evaluation@lab"]

    _edit(domain, "  - {name: strict-only, data: strict}", "  - {name: no-evidence-reward, reward: answer_only}")
    assert _repro(proj, env) == ["ablations@lab", "evaluation@lab"]

    reports = proj / "data" / "eval_reports" / "lab"
    reports.rename(proj / "lost")  # an output deleted by hand comes back from DVC's cache, nothing runs
    assert _repro(proj, env) == []
    assert sorted(p.name for p in reports.rglob("*")) == sorted(p.name for p in (proj / "lost").rglob("*"))
