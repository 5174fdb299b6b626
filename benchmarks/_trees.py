"""Run a benchmark script for an earlier checkout and for this tree, alternating, each in its own
process (``--json`` mode), and compare the medians — how a speed change is measured here."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["compare_trees"]

THIS_TREE = Path(__file__).resolve().parents[1]


def compare_trees(script: str, baseline: Path, args: Sequence[str], reps: int) -> dict[str, list[dict[str, float]]]:
    """``script --json *args`` ``reps`` times per tree (baseline first, then this tree, …); the
    last stdout line of each run is its JSON result."""
    trees = {"baseline": baseline.resolve(), "this tree": THIS_TREE}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(reps):
        for name, tree in trees.items():
            env = {**os.environ, "GRAPHDOJO_TREE": str(tree), "PYTHONPATH": str(tree)}
            out = subprocess.run(
                [sys.executable, script, "--json", *args], env=env, cwd=tree, capture_output=True, text=True
            )
            if out.returncode != 0:
                raise SystemExit(f"{name} ({tree}) failed:\n{out.stderr[-4000:]}")
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    return runs


def print_ratios(runs: dict[str, list[dict[str, float]]], unit: str = "s") -> None:
    """Median per measure and tree, and this tree / baseline."""
    print(f"{'measure':<34}{'baseline':>12}{'this tree':>12}{'ratio':>8}   ({unit}; medians)")
    for key, value in runs["this tree"][0].items():
        if not isinstance(value, (int, float)):
            continue
        b = statistics.median(r[key] for r in runs["baseline"])
        t = statistics.median(r[key] for r in runs["this tree"])
        print(f"{key:<34}{b:>12.2f}{t:>12.2f}{(t / b if b else float('nan')):>8.2f}")
