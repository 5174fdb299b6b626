"""The README demo's budget: ``graphdojo demo`` materializes every asset of the default domain in
≤ 20 minutes on 2 cores (the budget since the evaluation gained its baselines and
external questions), and a second run with nothing changed is a no-op in ≤ 30 s.

It runs the demo twice in a fresh data folder and Dagster home (or ``--data``), as the README's
user would, and prints

* the first run's wall time, per-asset times (from the Dagster run's step stats) and its ratio to
  the 1,200 s budget;
* the second run's wall time, its ratio to the 30 s budget and to the first run (same machine,
  same run of this script), and proof that it was a no-op: every asset reused its artifact (the
  same fingerprints, no new catalog rows);
* the process start-up alone (``graphdojo domains``) as the floor a no-op cannot beat.

    python benchmarks/demo.py [--data DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXE = Path(sys.executable).parent / "graphdojo"
FIRST_BUDGET_S, NOOP_BUDGET_S = 1200.0, 30.0


def _run(args: list[str], env: dict[str, str]) -> tuple[float, list[dict]]:
    t0 = time.perf_counter()
    proc = subprocess.run([str(EXE), *args], env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-6000:])
        raise SystemExit(f"graphdojo {' '.join(args)} failed (exit {proc.returncode})")
    return wall, [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _step_times(home: Path, run_id: str) -> list[tuple[str, float]]:
    import dagster as dg

    os.environ["DAGSTER_HOME"] = str(home)
    with dg.DagsterInstance.get() as instance:
        stats = instance.get_run_step_stats(run_id)
    return sorted(((s.step_key, (s.end_time or 0) - (s.start_time or 0)) for s in stats), key=lambda x: -x[1])


def _catalog_rows(data: Path) -> list[tuple]:
    from components.store import Catalog

    with Catalog(data / "catalog.duckdb")._connect() as con:
        return con.execute("SELECT asset, domain, fingerprint FROM artifacts ORDER BY 1, 2, 3").fetchall()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=None, help="data folder (default: a fresh temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the temporary folders")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="graphdojo-demo-bench-"))
    data = Path(args.data) if args.data else work / "data"
    home = work / "dagster_home"
    home.mkdir()
    env = {**os.environ, "GRAPHDOJO_DATA": str(data), "DAGSTER_HOME": str(home)}
    try:
        startup, _ = _run(["domains"], env)
        first, (line1,) = _run(["demo", "--json"], env)
        rows1 = _catalog_rows(data)
        second, (line2,) = _run(["demo", "--json"], env)
        rows2 = _catalog_rows(data)
        steps = _step_times(home, line1["run_id"])
        print(
            f"graphdojo demo ({line1['domain']}, {len(line1['materialized'])} assets, "
            f"{len(line1['checks'])} checks, ok={line1['ok']}) on {os.cpu_count()} cores"
        )
        print(f"  first run   {first:7.1f} s   budget {FIRST_BUDGET_S:.0f} s   ratio {first / FIRST_BUDGET_S:.2f}")
        for key, secs in steps:
            if secs >= 1.0:
                print(f"    {key:<55} {secs:7.1f} s  ({secs / first:5.1%})")
        noop = rows1 == rows2 and line2["materialized"] == line1["materialized"]
        print(
            f"  no-op rerun {second:7.1f} s   budget {NOOP_BUDGET_S:.0f} s   ratio {second / NOOP_BUDGET_S:.2f}   "
            f"rerun / first {second / first:.3f}   no new artifacts: {noop}"
        )
        print(f"  start-up    {startup:7.1f} s   (graphdojo domains: the floor of any run)")
        summary = {
            "first_s": round(first, 1),
            "noop_s": round(second, 1),
            "startup_s": round(startup, 1),
            "first_ratio": round(first / FIRST_BUDGET_S, 3),
            "noop_ratio": round(second / NOOP_BUDGET_S, 3),
            "noop": noop,
            "ok": bool(line1["ok"] and line2["ok"]),
            "steps_s": {k: round(s, 1) for k, s in steps},
        }
        print(json.dumps(summary))
        if not noop:
            raise SystemExit("the second run produced new artifacts: it was not a no-op")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
