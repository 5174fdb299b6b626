"""Does GraphCert GRPO add to the warm start? Short training arms scored on the validation split.

Each arm is GraphCert GRPO from the learning domain's SFT warm start (``benchmarks/learning.yaml``,
the data folder ``benchmarks/learning.py`` trains) with some of the RL investigation's choices
changed (``ARMS``: advantage scaling, the rollouts' nucleus, the learning rate, the step count;
docs/training.md, "What the suspects look like"), materialized through the normal pipeline
(``graphdojo materialize --asset graphcert_rft --asset graphcert_grpo`` with a domain file that is
the learning one plus the arm's ``train`` overrides, ``rft_rounds: 0`` among them, so GRPO starts
from the SFT warm start itself; the warm start is reused, not retrained). Every arm plays
the same ``rl_val_questions`` questions of the **validation split** (never the test split or the
external questions) before training and every ``rl_val_every`` steps, with the same seed; the
stage keeps its best point. Printed per arm: the validation curve (EM, EM on non-boolean
questions, reward, tool-call rate), the step the stage kept, and the paired differences (the
evaluation's paired bootstrap over questions, 95 %) of the last point and of the kept one
against step 0 — the warm start under the same sampling — on EM and on non-boolean EM, then one
JSON line.

    python benchmarks/rl_arms.py --data DIR [--arms batch-topp] [--domain-file benchmarks/learning.yaml]

The data folder must hold the warm start (``graphdojo materialize --domain-file
benchmarks/learning.yaml --asset checkpoints`` and its inputs). Run it with nothing else on the
machine (generation on 2 threads collapses when the other core is busy) and ≈ 22 GB of memory
free: full-weight GRPO of the 0.5B Solver peaked at 21.7 GB RSS (docs/benchmarks.md, 2026-12-05).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXE = Path(sys.executable).parent / "graphdojo"

#: RL investigation arms: ``train`` overrides of the learning domain (budgets merge into its own).
#: Every arm: 8 GRPO steps of 2 questions x 8 rollouts from the SFT warm start itself (rft_rounds
#: 0), the questions a probe of 48 x 4 found sometimes solved, the whole validation split played
#: twice before training and after the last step; rl_beta 0: with TRL's reference model (a float32
#: copy of the full-weight policy) the 12-step arm of 2026-12-05 was OOM-killed at 24 GB in its
#: second step, and at GraphCert's coefficient 1e-4 even the largest KL the learning table's GRPO
#: reached (4.4) adds at most 4.4e-4 to a loss whose advantages are of order 1.
_SHORT = {"rl_steps": 8, "rl_batch": 16, "rl_generations": 8, "rl_questions": 48, "rl_probe": 48,
          "rl_probe_samples": 4, "rl_val_questions": 200, "rl_val_samples": 2, "rl_val_every": 8,
          "rft_rounds": 0, "rl_beta": 0}  # fmt: skip
ARMS: dict[str, dict[str, Any]] = {
    # the suspects that survived the stored-rollout measurements, together: advantages scaled by
    # the batch (all-wrong groups' noise shrinks four-fold), rollouts in evaluation's 0.8 nucleus,
    # half the preset's learning rate
    "batch-topp": {"rl_advantages": "batch", "budgets": {**_SHORT, "rl_top_p": 0.8, "rl_learning_rate": 1e-5}},
    # the same at the GPU preset's (and GraphCert's) learning rate: batch-topp's 1e-5 stopped the
    # policy calling tools after three non-zero updates (docs/training.md)
    "batch-topp-lr1e-6": {"rl_advantages": "batch", "budgets": {**_SHORT, "rl_top_p": 0.8, "rl_learning_rate": 1e-6}},
    # TRL's default scaling (per group) with batch-topp-lr1e-6's step size and nucleus: what the
    # advantage scaling alone changes
    "group-topp-lr1e-6": {"rl_advantages": "group", "budgets": {**_SHORT, "rl_top_p": 0.8, "rl_learning_rate": 1e-6}},
}


def arm_domain_file(domain_file: Path, arm: dict[str, Any], out: Path) -> Path:
    """The learning domain file with the arm's ``train`` overrides (budgets merged) at ``out``."""
    import yaml

    cfg = yaml.safe_load(domain_file.read_text())
    train = cfg.setdefault("train", {})
    for key, value in arm.items():
        train[key] = {**(train.get(key) or {}), **value} if key == "budgets" else value
    out.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return out


def arm_summary(log: dict[str, Any]) -> dict[str, Any]:
    """The arm's validation curve, kept step and paired differences against step 0."""
    from components.training.selection import paired_points

    val = log.get("validation") or []
    out: dict[str, Any] = {"curve": [{k: v.get(k) for k in CURVE} for v in val], "chosen_step": log.get("chosen_step")}
    if len(val) >= 2:
        start, last = val[0], val[-1]
        kept = next((v for v in val if v["step"] == log.get("chosen_step")), last)
        for name, point in (("last", last), ("kept", kept)):
            for metric in ("em", "em_nonbool"):
                d = paired_points(point, start, metric)
                out[f"{name}_minus_start_{metric}"] = {"value": d["value"], "ci": d["ci"], "n": d["n"]}
    return out


CURVE = ("step", "em", "em_nonbool", "reward", "tool_call_rate", "valid_format", "episodes")


def run_arm(data: Path, domain_file: Path, name: str) -> dict[str, Any]:
    from components.store import Catalog
    from orchestration.domains import load_domain_file

    # beside the original, so its relative paths (the eval questions) resolve the same way
    arm_file = arm_domain_file(domain_file, ARMS[name], domain_file.parent / f".rl-arm-{name}.yaml")
    try:
        domain = load_domain_file(arm_file).name
        env = {**os.environ, "GRAPHDOJO_DATA": str(data)}
        env.pop("DAGSTER_HOME", None)  # the data folder's own instance
        t0 = time.perf_counter()
        cmd = [str(EXE), "materialize", "--domain-file", str(arm_file), "--json"]
        cmd += ["--asset", "graphcert_rft", "--asset", "graphcert_grpo"]  # GRPO reads RFT's (untrained) record
        proc = subprocess.run(cmd, env=env, cwd=ROOT, text=True, stdout=subprocess.PIPE)
        wall = time.perf_counter() - t0
    finally:
        arm_file.unlink(missing_ok=True)
    if proc.returncode != 0:
        raise SystemExit(f"arm {name}: graphdojo materialize failed (exit {proc.returncode}); see the log above")
    rec = Catalog(data / "catalog.duckdb").latest("graphcert_grpo", domain)
    if rec is None or rec.path is None:
        raise SystemExit(f"arm {name}: no graphcert_grpo checkpoint was recorded")
    log = json.loads((Path(rec.path) / "training_log.json").read_text())
    log["chosen_step"] = (rec.metadata or {}).get("chosen_step")  # the stage's metadata says which step it kept
    return {"arm": name, "overrides": ARMS[name], "wall_s": round(wall, 1), "folder": rec.path, **arm_summary(log)}


def _fmt(d: dict[str, Any]) -> str:
    if d["value"] is None:
        return "n/a"
    return f"{d['value']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}] (n {d['n']})"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="the learning benchmark's data folder (with its warm start)")
    p.add_argument("--domain-file", default=str(ROOT / "benchmarks" / "learning.yaml"))
    p.add_argument("--arms", nargs="+", default=["batch-topp"], choices=sorted(ARMS))
    args = p.parse_args()
    data = Path(args.data).resolve()
    results = []
    for name in args.arms:
        r = run_arm(data, Path(args.domain_file).resolve(), name)
        results.append(r)
        print(f"## arm {name} ({time.strftime('%Y-%m-%d')}): {json.dumps(r['overrides'])}, wall {r['wall_s']:.0f} s")
        print("| step | EM | EM non-bool | reward | tool calls | valid format | episodes |")
        print("|---|---|---|---|---|---|---|")
        for c in r["curve"]:
            print("| " + " | ".join(f"{c[k]:.3f}" if isinstance(c[k], float) else str(c[k]) for k in CURVE) + " |")
        print(f"kept step {r['chosen_step']}")
        for key in ("last_minus_start_em", "last_minus_start_em_nonbool", "kept_minus_start_em"):
            if key in r:
                print(f"  {key}: {_fmt(r[key])}")
        print(flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
