"""Does certified data make a better solver? The learning table, on 2 cores.

One domain (``benchmarks/learning.yaml``: the academic graph, 1,500 template candidates, the
``cpu-learn`` preset with the CPU Solver chosen on the validation split — Qwen2.5-Coder-0.5B with
LoRA — its SFT warm start and certified rejection-sampling fine-tuning) is materialized through the
normal pipeline (``graphdojo materialize --domain-file``), so training lands in cached
checkpoints: a second run re-evaluates nothing and retrains nothing (delete the data folder to
start over). The evaluation is the ``eval_reports`` asset on the entity-disjoint **test split**
(never tuned on) and the graph's externally written questions (``eval.external``): the rows the
domain file's ``eval.systems`` names (answer prior, closed book, the base model few-shot, the
1.5B off-the-shelf model few-shot, SFT, RFT), 2 sampled runs per question, 95 % bootstrap CIs over
questions (over seeds, then questions, for a row trained with several seeds), EM, EM on
non-boolean questions and grounded EM, by answer type, and the paired differences against the
answer prior and the best off-the-shelf row, RFT − SFT.

It prints the table (Markdown, for docs/benchmarks.md), the training curves that explain it
(per RL stage: how the training questions were chosen, the non-zero-advantage share, tool-call
rate and the validation-reward curve; DPO's pairs), the time split between training and
evaluation against the budgets (training ≤ 90 min, evaluation ≤ 45 min) and one JSON line.

    python benchmarks/learning.py [--data DIR] [--domain-file benchmarks/learning.yaml]
    python benchmarks/learning.py --eval-available [--data DIR] [--systems ROW …]   # what has been trained
    python benchmarks/learning.py --dancer [--data DIR]           # + GraphDancer's Graph-CoT rows

``--dancer`` adds, after the table, GraphDancer in its own Graph-CoT environment on the same data
folder and test questions (warm start, stage 1 as GRPO and PPO, DPO, NoPPO / NoDPO / NoCurriculum,
the PPO-vs-GRPO step time): ``benchmarks/dancer.py`` run on ``--data``.

``--seeds N`` trains the rows named by ``--seeded-rows`` (default: ``sft-only``) with training
seeds 1 … N−1 as well (``GRAPHDOJO_TRAIN_SEED``: the same domain, its graph, candidates, certified
data and curriculum reused; the seeds' checkpoint folders are listed in ``<data>/seeds.json``), then
evaluates every row again into ``<data>/learning-report/``: a seeded row is one row over its seeds
(its CI resamples seeds, then questions; paired differences state their sign per seed). Rows and
seeds already answered are not answered again (the evaluation's record cache,
``<data>/eval-cache/``), so a run stopped part-way resumes.

``--eval-available`` skips the pipeline and evaluates, with the same evaluation code, questions,
seeds and judge as ``eval_reports``, the systems whose checkpoints the data folder already holds
(e.g. after stopping a run that would not fit a time budget); the report goes to
``<data>/learning-report/`` and the rows not trained are listed as such.

Run it with nothing else on the machine (generation on 2 threads collapses when the other core
is busy).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXE = Path(sys.executable).parent / "graphdojo"
TRAIN_BUDGET_S, EVAL_BUDGET_S = 90 * 60.0, 45 * 60.0
TRAINING = ("checkpoints", "graphcert_rft", "graphcert_grpo", "graphdancer_rl", "preference_pairs", "graphdancer_dpo")
SETUP = ("graph_snapshot", "qa_candidates", "certified_dataset", "curriculum_splits")


def table(report: dict[str, Any]) -> list[str]:
    """Every section's systems, paired differences and correct answers by answer type, as
    Markdown lines (the report's own tables: components/evaluation/report.py)."""
    from components.evaluation.report import md_table, section_tables

    lines: list[str] = []
    for title, rows in section_tables(report):
        if "template family" in title or "difficulty" in title:
            continue
        lines += [f"### {title}", "", md_table(rows) or "(none)", ""]
    return lines


def curves(data: Path, domain: str) -> list[str]:
    """What each RL stage did, from its checkpoint's training log."""
    from components.store import Catalog

    catalog = Catalog(data / "catalog.duckdb")
    out = []
    for asset in TRAINING:
        rec = catalog.latest(asset, domain)
        if rec is None:
            out.append(f"- {asset}: not materialized")
            continue
        meta = rec.metadata
        if asset == "preference_pairs":
            out.append(
                f"- preference_pairs: {meta.get('pairs')} pairs from {meta.get('questions')} questions × "
                f"{meta.get('samples_per_question')} samples ({meta.get('pairs_per_question', 0):.2f} per question; "
                f"dropped {meta.get('dropped')})"
            )
            continue
        if rec.path is None or not (Path(rec.path) / "training_log.json").is_file():
            out.append(f"- {asset}: {meta.get('reason', 'nothing trained')}")
            continue
        log = json.loads((Path(rec.path) / "training_log.json").read_text())
        losses = log.get("losses") or []
        steps = log.get("curves") or []
        line = f"- {asset}: {len(losses)} steps, loss {losses[0]:.3f} → {losses[-1]:.3f}" if losses else f"- {asset}"
        sel = log.get("selection") or {}
        for rnd in sel.get("rounds") or []:  # rejection sampling: what each round kept
            v = rnd.get("validation") or {}
            line += (
                f"; round {rnd['round']}: kept {rnd['kept']}/{rnd['sampled']} ({rnd['kept_questions']} questions)"
                + (f", validation pass@k {v['pass_at_k']:.3f}" if v else "")
            )
        if "probed" in sel:
            line += (
                f"; probe: {sel['probed']} questions × {sel['samples']}: never {sel['never']}, sometimes "
                f"{sel['sometimes']}, always {sel['always']} → trained on {sel['selected']} "
                f"({sel['selected_sometimes']} sometimes solved)"
            )
        for key in ("reward", "nonzero_advantage", "tool_call_rate", "kl", "margin"):
            values = [c[key] for c in steps if c.get(key) is not None]
            if values:
                line += f"; {key} " + " ".join(f"{v:.3f}" for v in values)
        val = log.get("validation") or []
        if val:
            line += "; validation reward " + " → ".join(
                f"{v['reward']:.3f}±{v['reward_se']:.3f} (step {v['step']})" for v in val
            )
        out.append(line)
    return out


#: a trained row → the training assets its checkpoint needs (materialized per extra seed)
ROW_ASSETS = {
    "sft-only": ("checkpoints",),
    "graphcert-rft": ("checkpoints", "graphcert_rft"),
    "graphcert-grpo": ("checkpoints", "graphcert_grpo"),
    "graphdancer-rl": ("checkpoints", "graphdancer_rl"),
}


def _known_seeds(data: Path) -> dict[int, dict[str, str]] | None:
    """The training seeds :func:`train_seeds` recorded in the data folder (None: only the main run)."""
    record = data / "seeds.json"
    return {int(k): v for k, v in json.loads(record.read_text()).items()} if record.is_file() else None


def train_seeds(data: Path, domain_file: Path, seeds: int, rows: list[str]) -> dict[int, dict[str, str]]:
    """Seeds 1 … ``seeds``−1 of the training assets ``rows`` need (seed 0 is the main run's),
    each a ``graphdojo materialize`` with ``GRAPHDOJO_TRAIN_SEED``; ``{seed: {asset: folder}}``
    (seed 0 included), kept in ``<data>/seeds.json`` so a later run skips seeds already trained."""
    from components.store import Catalog
    from orchestration.domains import load_domain_file

    domain = load_domain_file(domain_file).name
    assets = sorted({a for r in rows for a in ROW_ASSETS[r]})
    record = data / "seeds.json"
    known = _known_seeds(data) or {}

    def latest() -> dict[str, str]:
        catalog = Catalog(data / "catalog.duckdb")
        out = {}
        for a in assets:
            rec = catalog.latest(a, domain)
            if rec is not None and rec.path is not None:
                out[a] = rec.path
        return out

    if 0 not in known or set(known[0]) != set(assets):
        known[0] = latest()  # the main run's (train.seed of the domain file)
        record.write_text(json.dumps(known, indent=2))
    env = {**os.environ, "GRAPHDOJO_DATA": str(data)}
    env.pop("DAGSTER_HOME", None)
    for seed in range(1, seeds):
        if seed in known and set(known[seed]) == set(assets) and all(Path(p).is_dir() for p in known[seed].values()):
            continue
        print(f"training seed {seed}: {', '.join(assets)}", file=sys.stderr, flush=True)
        cmd = [str(EXE), "materialize", "--domain-file", str(domain_file), "--json"]
        cmd += [x for a in assets for x in ("--asset", a)]
        subprocess.run(
            cmd, env={**env, "GRAPHDOJO_TRAIN_SEED": str(seed)}, cwd=ROOT, check=True, stdout=subprocess.DEVNULL
        )
        known[seed] = latest()
        record.write_text(json.dumps(known, indent=2))
    return {s: known[s] for s in range(seeds)}


def evaluate_available(
    data: Path,
    domain_file: Path,
    seeds: dict[int, dict[str, str]] | None = None,
    only: list[str] | None = None,
) -> tuple[dict[str, Any], Path, float]:
    """The evaluation of the systems trained so far (see the module docstring): ``(report, its
    folder, seconds)``. ``seeds`` (:func:`train_seeds`): the seeded rows' checkpoints per training
    seed, each evaluated as the same row with its ``train_seed``. ``only``: evaluate these rows
    now (the others are listed as not evaluated; a later run without it answers them)."""
    from components.evaluation.questions import split_questions
    from components.evaluation.report import write_report
    from components.evaluation.run import (
        NO_MODEL,
        SystemSpec,
        _worked_examples,
        ablation_systems,
        dancer_systems,
        evaluate_systems,
        external_rows,
        judge_dir,
        offshelf_systems,
    )
    from components.evaluation.run import PAIRS as REPORT_PAIRS
    from components.llm.registry import model_folder
    from components.store import Catalog
    from components.store.artifact import Artifact
    from components.training.ablations import ablation_pairs
    from components.training.checkpoint import base_model_dir
    from orchestration.domains import load_domain_file

    cfg = load_domain_file(domain_file)
    catalog = Catalog(data / "catalog.duckdb")

    def art(asset: str) -> Artifact | None:
        rec = catalog.latest(asset, cfg.name)
        return None if rec is None or rec.path is None else Artifact.from_record(rec)

    inputs = {k: art(a) for k, a in (("certified", "certified_dataset"), ("curriculum", "curriculum_splits"))}
    inputs["snapshot"] = art("graph_snapshot")
    if any(v is None for v in inputs.values()):
        raise SystemExit("the data folder has no certified data / curriculum / snapshot yet")
    base = str(base_model_dir(cfg.train, data))
    few_shot = _worked_examples(inputs, cfg.evaluate)
    sft = art("checkpoints")  # the latest: after other seeds were trained, seed 0's is in seeds
    sft_path = (seeds or {}).get(0, {}).get("checkpoints") or (str(sft.path) if sft else None)
    trained = {
        "sft-only": ("checkpoints", "SFT warm start"),
        "graphcert-rft": ("graphcert_rft", "certified rejection-sampling fine-tuning"),
        "graphcert-grpo": ("graphcert_grpo", "GraphCert GRPO"),
        "graphdancer-rl": ("graphdancer_rl", "GraphDancer stage 1"),  # dancer_systems names algorithm, environment
        "graphdancer-rl→dpo": ("graphdancer_dpo", "GraphDancer RL → DPO"),
    }
    systems = [
        SystemSpec("answer prior", "answer_prior", NO_MODEL, "no model: the most common training answer"),
        SystemSpec("closed book", "closed_book", sft_path, "the SFT Solver without tools"),
        SystemSpec("base (before training)", "python_cypher", base, "no training"),
        SystemSpec(
            "base few-shot", "python_cypher", base, "worked examples in the prompt", "", few_shot, offshelf=True
        ),
        *offshelf_systems(
            [(name, str(model_folder(name, data))) for name in cfg.evaluate.offshelf],
            few_shot,
            cfg.evaluate.offshelf_sections,
        ),
    ]
    for name, (asset, method) in trained.items():
        by_seed = {s: paths[asset] for s, paths in (seeds or {}).items() if asset in paths}
        if by_seed and name in ROW_ASSETS and ROW_ASSETS[name][-1] == asset:
            systems += [SystemSpec(name, "python_cypher", p, method, train_seed=s) for s, p in sorted(by_seed.items())]
            continue
        a = art(asset)
        systems.append(
            SystemSpec(name, "python_cypher", str(a.path), method)
            if a is not None
            else SystemSpec(name, "python_cypher", None, method, "not trained in this run (stopped before it)")
        )
    systems = dancer_systems(systems, {}, cfg.train)  # GraphDancer's rows as the domain trains them
    pairs = REPORT_PAIRS
    ablations = art("ablations")  # the certification ablation's arms, when the domain has them
    if ablations is not None:
        systems += ablation_systems(ablations)
        pairs += tuple(ablation_pairs(ablations.summary.get("ablations") or []))
    if only:
        unknown = set(only) - {s.name for s in systems}
        if unknown:
            raise SystemExit(f"--systems names unknown rows {sorted(unknown)}; known: {[s.name for s in systems]}")
        systems = [
            s if s.name in only else replace(s, model_dir=None, note="not evaluated in this run") for s in systems
        ]
    rows = split_questions(str(inputs["curriculum"].path), str(inputs["certified"].path))
    train_rows = split_questions(str(inputs["curriculum"].path), str(inputs["certified"].path), "train")
    external, _skipped, _outside = external_rows(cfg.evaluate, str(inputs["snapshot"].path))
    t0 = time.perf_counter()
    report = evaluate_systems(
        systems,
        rows,
        str(inputs["snapshot"].path),
        cfg.evaluate,
        judge_model_dir=judge_dir(cfg.evaluate, data),
        progress=lambda name, secs: print(f"  evaluated {name}: {secs:.0f} s", file=sys.stderr, flush=True),
        pairs=pairs,
        external_rows=external,
        train_rows=train_rows,
        record_cache=data / "eval-cache" / cfg.name,  # the eval_reports asset's: its rows are not answered again
    )
    out = data / "learning-report"
    write_report(report, out, f"graphdojo learning benchmark — {cfg.name} (systems trained so far, 1 seed)")
    return report, out, time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(ROOT / "data" / "benchmarks" / "learning"), help="data folder (kept)")
    p.add_argument("--domain-file", default=str(ROOT / "benchmarks" / "learning.yaml"))
    p.add_argument("--eval-available", action="store_true", help="evaluate the systems trained so far, no pipeline")
    p.add_argument("--dancer", action="store_true", help="then GraphDancer's Graph-CoT rows (benchmarks/dancer.py)")
    p.add_argument("--seeds", type=int, default=1, help="training seeds of the --seeded-rows (default 1)")
    p.add_argument(
        "--seeded-rows", nargs="+", default=["sft-only"], choices=sorted(ROW_ASSETS), help="rows trained per seed"
    )
    p.add_argument("--systems", nargs="+", help="with --eval-available: evaluate only these rows now")
    args = p.parse_args()
    data = Path(args.data).resolve()
    if args.eval_available:
        os.environ["GRAPHDOJO_DATA"] = str(data)
        from orchestration.domains import load_domain_file

        seeds = _known_seeds(data)
        report, out, secs = evaluate_available(data, Path(args.domain_file), seeds, args.systems)
        domain = load_domain_file(Path(args.domain_file)).name
        print(f"## Learning table ({domain}, test split, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores)\n")
        print("\n".join(table(report)))
        print("\nTraining:\n" + "\n".join(curves(data, domain)))
        ratio = secs / EVAL_BUDGET_S
        print(f"\nevaluation {secs:.0f} s (budget {EVAL_BUDGET_S:.0f} s, ratio {ratio:.2f}); report {out}")
        return
    env = {**os.environ, "GRAPHDOJO_DATA": str(data)}
    env.pop("DAGSTER_HOME", None)  # the data folder's own instance
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(EXE), "materialize", "--domain-file", args.domain_file, "--json"],
        env=env,
        cwd=ROOT,
        text=True,
        stdout=subprocess.PIPE,
    )
    wall = time.perf_counter() - t0
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"graphdojo materialize failed (exit {proc.returncode}); see the log above")
    line = lines[-1]
    domain = line["domain"]
    import dagster as dg

    os.environ["DAGSTER_HOME"] = str(data / "dagster_home")
    with dg.DagsterInstance.get() as instance:
        stats = instance.get_run_step_stats(line["run_id"])
    steps = {s.step_key.split("__", 1)[-1]: (s.end_time or 0) - (s.start_time or 0) for s in stats}
    train_s = sum(v for k, v in steps.items() if k in TRAINING)
    eval_s = steps.get("eval_reports", 0.0)
    setup_s = sum(v for k, v in steps.items() if k in SETUP)
    from components.store import Catalog

    rec = Catalog(data / "catalog.duckdb").latest("eval_reports", domain)
    if rec is None or rec.path is None:
        raise SystemExit("no eval_reports artifact")
    report = json.loads((Path(rec.path) / "report.json").read_text())
    print(f"## Learning table ({domain}, test split, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores)\n")
    print("\n".join(table(report)))
    print("\nTraining:\n" + "\n".join(curves(data, domain)))
    reused = " (artifacts reused: times are of this run only)" if wall < 120 else ""
    print(
        f"\nwall {wall:.0f} s{reused}: set-up {setup_s:.0f} s; training {train_s:.0f} s "
        f"(budget {TRAIN_BUDGET_S:.0f} s, ratio {train_s / TRAIN_BUDGET_S:.2f}); evaluation {eval_s:.0f} s "
        f"(budget {EVAL_BUDGET_S:.0f} s, ratio {eval_s / EVAL_BUDGET_S:.2f})"
    )
    for key, secs in sorted(steps.items(), key=lambda kv: -kv[1]):
        if secs >= 1.0:
            print(f"    {key:<30} {secs:7.1f} s")
    summary = {
        "domain": domain,
        "wall_s": round(wall, 1),
        "train_s": round(train_s, 1),
        "eval_s": round(eval_s, 1),
        "systems": {
            n: {k: e["summary"][k] for k in ("em", "em_ci", "f1", "f1_ci", "vf", "questions")}
            for n, e in report["systems"].items()
            if e.get("available") and e.get("summary")
        },
        "paired": [
            {"a": p["a"], "b": p["b"], "em": p["em"]["value"], "em_ci": p["em"]["ci"], "n": p["em"]["n"]}
            for p in report.get("paired") or []
        ],
        "report": str(Path(rec.path) / "report.html"),
    }
    print(json.dumps(summary))
    if args.seeds > 1:
        seeds = train_seeds(data, Path(args.domain_file), args.seeds, args.seeded_rows)
        report, out, secs = evaluate_available(data, Path(args.domain_file), seeds)
        print(f"\n## Learning table, {args.seeds} training seeds of {', '.join(args.seeded_rows)}\n")
        print("\n".join(table(report)))
        print(f"\nevaluation {secs:.0f} s (rows already answered reused); report {out}")
    if args.dancer:
        print(flush=True)
        dancer = [sys.executable, str(ROOT / "benchmarks" / "dancer.py"), "--data", str(data)]
        subprocess.run([*dancer, "--domain-file", args.domain_file, "--resume"], cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
