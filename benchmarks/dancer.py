"""GraphDancer in its own environment, measured on 2 cores: the learning rows in the Graph-CoT
function API (warm start, stage 1 as PPO — the published chain and the pipeline's default — and as
GRPO, PPO → DPO, and the ablations NoPPO, NoDPO, NoCurriculum) and a stage-1 PPO step against a
GRPO step on the same questions.

It reuses a data folder of ``benchmarks/learning.py`` (the academic graph, its certified data and
its entity-disjoint split — the same test questions as the learning table's GraphCert rows),
builds the Graph-CoT teacher trajectories on it (measured levels; the split is unchanged), then
trains with the same functions the pipeline's assets call (``train.dancer_env: graph_cot``,
``cpu-learn`` budgets scaled to fit, listed below) and evaluates every row in the Graph-CoT
environment with the turn budget it trained with: the base model (zero-shot Graph-CoT prompting)
first, so each stage has its comparison. EM / F1 with 95 % bootstrap CIs over questions,
``--samples`` sampled answers per question, the paired differences of each stage against the one
before; also on the subset of test questions that have a teacher trajectory within the budget
(what the environment can answer in that many calls).

    python benchmarks/dancer.py --data DIR [--questions 40] [--samples 2] [--out DIR] [--resume]
        [--seeds 3] [--stage1-only] [--external 40]

``--seeds K`` trains the default stage 1 (PPO) K times (training seeds s, s + 1, …; one warm start)
and reports them as one row whose CIs resample seeds, then questions; ``--stage1-only`` stops
after it (zero-shot base, warm start and PPO rows: the issue's stage-1 target, without GRPO, DPO
and the ablations); ``--external N`` also asks N of the domain's externally written questions
(``eval.external``; a fixed subset), reported as their own section — questions the four
functions cannot express are asked and counted like the others.

Run with nothing else on the machine (generation on 2 threads collapses when the other core is busy).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: the cpu-learn preset scaled to fit the whole benchmark in about an hour on 2 cores (and DPO on
#: pairs of five-turn Graph-CoT episodes in 24 GiB: two pairs per step)
BUDGETS = {
    "rl_probe": 8,
    "rl_val_questions": 16,
    "rl_val_every": 2,
    "pair_questions": 8,
    "dpo_steps": 6,
    "dpo_batch": 2,
}
PAIRS = (
    ("graphdancer warm start", "graph-cot zero-shot"),
    ("graphdancer-rl (GRPO)", "graphdancer warm start"),
    ("graphdancer-rl (PPO)", "graphdancer warm start"),
    ("graphdancer-rl→dpo", "graphdancer-rl (PPO)"),
    ("ablation: NoPPO", "graphdancer warm start"),
    ("ablation: NoCurriculum", "graphdancer-rl→dpo"),
)


def _ci(lo_hi: Any, signed: bool = False) -> str:
    lo, hi = lo_hi
    return f"[{lo:+.3f}, {hi:+.3f}]" if signed else f"[{lo:.3f}, {hi:.3f}]"


def _row(name: str, s: dict[str, Any]) -> str:
    seeds = len(s.get("train_seeds") or [0])
    nonbool = f"{s['em_nonbool']:.3f}" if s.get("em_nonbool") is not None else "–"
    return (
        f"| {name} | {s['em']:.3f} {_ci(s['em_ci'])} | {nonbool} | {s['f1']:.3f} {_ci(s['f1_ci'])} | "
        f"{s['vf']:.2f} | {s['vc']:.2f} | {s['questions']} × {len(s['seeds'])}"
        + (f" × {seeds} seeds" if seeds > 1 else "")
        + " |"
    )


def tables(report: dict[str, Any], reachable: set[str]) -> list[str]:
    """The rows on every test question and on the reachable subset, then the paired differences;
    the same for the external questions when the run asked them."""
    from components.evaluation.metrics import EvalRecord, paired_difference, summarize

    head = [
        "| system | EM [95 % CI] | non-boolean EM | F1 [95 % CI] | valid format | tool calls | questions × samples |"
    ]
    head.append("|---|---|---|---|---|---|---|")
    fields = set(EvalRecord.__dataclass_fields__)  # a report record also carries derived keys (outcome, grounded)
    records = [EvalRecord(**{k: v for k, v in r.items() if k in fields}) for r in report["records"]]
    lines: list[str] = []
    for section, title in (("test", "All test questions"), ("external", "External questions")):
        mine = [r for r in records if r.section == section]
        if not mine:
            continue
        lines += [f"{title}:", "", *head]
        for name, entry in report["systems"].items():
            sub = [r for r in mine if r.system == name]
            lines.append(_row(name, summarize(sub)) if sub else f"| {name} | not evaluated: {entry.get('note', '')} |")
        if section == "test":
            lines += ["", f"Test questions with a Graph-CoT teacher trajectory within the budget ({len(reachable)}):"]
            lines += ["", *head]
            for name in report["systems"]:
                sub = [r for r in mine if r.system == name and r.question_id in reachable]
                if sub:
                    lines.append(_row(name, summarize(sub)))
        lines += ["", f"| paired difference ({title.lower()}) | EM [95 % CI] | F1 [95 % CI] | questions | per seed |"]
        lines.append("|---|---|---|---|---|")
        by = {n: [r for r in mine if r.system == n] for n in report["systems"]}
        for a, b in PAIRS:
            if by.get(a) and by.get(b):
                em, f1 = paired_difference(by[a], by[b], "em"), paired_difference(by[a], by[b], "f1")
                per_seed = ", ".join(f"{v:+.3f}" for v in em["per_seed"].values()) if len(em["per_seed"]) > 1 else ""
                lines.append(
                    f"| {a} − {b} | {em['value']:+.3f} {_ci(em['ci'], True)} | "
                    f"{f1['value']:+.3f} {_ci(f1['ci'], True)} | {em['n']} | {per_seed} |"
                )
        lines.append("")
    return lines


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="a benchmarks/learning.py data folder (certified data, split)")
    p.add_argument("--domain-file", default=str(ROOT / "benchmarks" / "learning.yaml"))
    p.add_argument("--out", default=None, help="where the checkpoints and the report go (default: DATA/dancer)")
    p.add_argument("--questions", type=int, default=40)
    p.add_argument("--samples", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--resume", action="store_true", help="reuse the checkpoints an interrupted run saved in --out")
    p.add_argument("--seeds", type=int, default=1, help="training seeds of the PPO stage 1 (one warm start)")
    p.add_argument("--stage1-only", action="store_true", help="zero-shot, warm start and PPO stage 1 only")
    p.add_argument("--external", type=int, default=0, help="also ask this many external questions (0: none)")
    args = p.parse_args()
    data = Path(args.data).resolve()
    os.environ["GRAPHDOJO_DATA"] = str(data)
    out = Path(args.out).resolve() if args.out else data / "dancer"
    out.mkdir(parents=True, exist_ok=True)

    from components.curriculum import split_items
    from components.curriculum.build import measure_levels
    from components.evaluation.agents import EvalConfig
    from components.evaluation.questions import split_questions
    from components.evaluation.report import write_report
    from components.evaluation.run import SystemSpec, evaluate_systems, external_rows
    from components.store import Catalog
    from components.store.fingerprint import read_parquet
    from components.training.checkpoint import TrainConfig, base_model_dir
    from components.training.dancer_ablations import pairs_then_dpo
    from components.training.stages import graph_cot_items, graph_cot_warm_start, graphdancer_rl
    from orchestration.domains import load_domain_file

    cfg = load_domain_file(Path(args.domain_file))
    catalog = Catalog(data / "catalog.duckdb")
    paths = {}
    for asset in ("graph_snapshot", "certified_dataset", "curriculum_splits"):
        rec = catalog.latest(asset, cfg.name)
        if rec is None or rec.path is None:
            raise SystemExit(f"{data} has no {asset} for {cfg.name}: run benchmarks/learning.py first")
        paths[asset] = str(rec.path)
    db = paths["graph_snapshot"]
    wall: dict[str, float] = {}

    def timed(name: str, fn: Any) -> Any:
        log = out / name / "training_log.json"
        if args.resume and log.is_file():  # a stage of an interrupted run: its saved log
            print(f"# {name}: reused from {log.parent}", file=sys.stderr, flush=True)
            saved = json.loads(log.read_text())
            return SimpleNamespace(**{"examples": None, **saved, "output_dir": str(log.parent)})
        t0 = time.perf_counter()
        print(f"# {name} …", file=sys.stderr, flush=True)
        result = fn()
        wall[name] = time.perf_counter() - t0
        print(f"# {name}: {wall[name]:.0f} s", file=sys.stderr, flush=True)
        return result

    certified = read_parquet(paths["certified_dataset"])
    items = [dict(i) for i in read_parquet(paths["curriculum_splits"])]
    traj = timed("teacher trajectories", lambda: measure_levels(items, certified, db))
    train_items, val_items = split_items(items, "train"), split_items(items, "validation")
    train = TrainConfig(
        preset="cpu-learn",
        threads=args.threads,
        dancer_stage1="ppo",
        dancer_env="graph_cot",
        budgets=BUDGETS,
        seed=cfg.train.seed,
    )
    r = train.resolved()
    turns, tokens = r["dancer_turns"], r["dancer_new_tokens"]
    kw = {"data_fingerprint": "benchmark", "domain": cfg.name}
    warm = timed(
        "warm_start",
        lambda: graph_cot_warm_start(base_model_dir(train, data), train_items, db, train, out / "warm_start", **kw),
    )
    start = warm.output_dir

    def stage1(name: str, config: TrainConfig, curriculum: bool = True) -> Any:
        return timed(
            name,
            lambda: graphdancer_rl(
                start, train_items, db, config, out / name, validation=val_items, curriculum=curriculum, **kw
            ),
        )

    # the published chain (PPO, then DPO from it) keeps its best validation point; GRPO, the
    # alternative, and NoCurriculum's stage 1 skip the validation curve to fit the budget
    no_val = replace(train, budgets={**BUDGETS, "rl_val_questions": 0})
    ppo = stage1("rl_ppo", train)
    seeded = {train.seed: out / "rl_ppo"}  # further training seeds of the same stage, from one warm start
    runs = {train.seed: ppo}
    for k in range(1, args.seeds):
        seeded[train.seed + k] = out / f"rl_ppo-seed{train.seed + k}"
        runs[train.seed + k] = stage1(seeded[train.seed + k].name, replace(train, seed=train.seed + k))
    base = str(base_model_dir(train, data))
    where = "Graph-CoT API"
    systems = [
        SystemSpec("graph-cot zero-shot", "graph_cot", base, "base model, Graph-CoT prompting", max_turns=turns),
        SystemSpec("graphdancer warm start", "graph_cot", start, f"SFT on teacher trajectories ({where})"),
        *(
            SystemSpec("graphdancer-rl (PPO)", "graph_cot", str(d), f"stage 1 PPO ({where})", train_seed=seed)
            for seed, d in seeded.items()
        ),
    ]
    grpo = dpo = no_ppo = no_cur = None
    if not args.stage1_only:
        grpo = stage1("rl_grpo", replace(no_val, dancer_stage1="grpo"))
        pk = {"domain": cfg.name, "fingerprint": "benchmark"}

        def pairs_dpo(name: str, start_dir: Any, curriculum: bool = True) -> dict[str, Any]:
            t0 = time.perf_counter()
            res = pairs_then_dpo(start_dir, train_items, db, train, out / name, curriculum=curriculum, **pk)
            wall[f"{name} (pairs + DPO)"] = time.perf_counter() - t0
            return res

        dpo = pairs_dpo("dpo", out / "rl_ppo")
        no_ppo = pairs_dpo("no_ppo", start)
        stage1("nocur_rl", no_val, curriculum=False)
        no_cur = pairs_dpo("no_cur", out / "nocur_rl", curriculum=False)

        def folder(result: dict[str, Any], path: Path, fallback: Path | None = None) -> str | None:
            return str(path) if result["trained"] else (str(fallback) if fallback else None)

        systems += [
            SystemSpec("graphdancer-rl (GRPO)", "graph_cot", str(out / "rl_grpo"), f"stage 1 GRPO ({where})"),
            SystemSpec("graphdancer-rl→dpo", "graph_cot", folder(dpo, out / "dpo"), f"PPO → DPO ({where})"),
            SystemSpec("ablation: NoPPO", "graph_cot", folder(no_ppo, out / "no_ppo"), "DPO from the warm start"),
            SystemSpec(
                "ablation: NoDPO", "graph_cot", str(out / "rl_ppo"), "stage 1 PPO", same_as="graphdancer-rl (PPO)"
            ),
            SystemSpec(
                "ablation: NoCurriculum",
                "graph_cot",
                folder(no_cur, out / "no_cur", out / "nocur_rl"),
                "uniform sampling in stage 1 and DPO" + ("" if no_cur["trained"] else " (stage 1 only: no pairs)"),
            ),
        ]
    systems = [replace(s, max_turns=turns, note=s.note or ("" if s.model_dir else "not trained")) for s in systems]
    evaluate = EvalConfig(
        samples=args.samples,
        max_questions=args.questions,
        max_turns=turns,
        max_new_tokens=tokens,
        threads=args.threads,
        judge=False,
        few_shot=0,
    )
    rows = split_questions(paths["curriculum_splits"], paths["certified_dataset"])[: args.questions]
    external: list[dict[str, Any]] = []
    if args.external:
        if not cfg.evaluate.external:
            raise SystemExit(f"--external: {args.domain_file} has no eval.external question file")
        external, skipped, _ = external_rows(replace(cfg.evaluate, external_questions=args.external), db)
        print(f"# external: {len(external)} questions ({len(skipped)} skipped)", file=sys.stderr, flush=True)
    report = timed(
        "evaluation",
        lambda: evaluate_systems(
            systems,
            rows,
            db,
            evaluate,
            judge_model_dir=None,
            external_rows=external,
            progress=lambda n, s: print(f"  evaluated {n}: {s:.0f} s", file=sys.stderr, flush=True),
        ),
    )
    write_report(report, out / "report", f"GraphDancer in the Graph-CoT environment — {cfg.name}")
    test_items = {i["id"]: i for i in split_items(items, "test")}
    reachable = {str(q["id"]) for q in rows if q["id"] in test_items and graph_cot_items([test_items[q["id"]]], turns)}

    print(f"## GraphDancer in the Graph-CoT environment ({cfg.name}, test split, {time.strftime('%Y-%m-%d')})\n")
    print(f"teacher trajectories: {traj['trajectories']} of {len(items)} items; excluded {traj['excluded']}")
    usable = graph_cot_items(train_items, turns)
    print(f"training items with a trajectory within {turns - 1} calls: {len(usable)} of {len(train_items)}\n")
    print("\n".join(tables(report, reachable)))
    g = [c["step_s"] for c in grpo.curves if c.get("step_s") is not None] if grpo is not None else []
    q = [c["step_s"] for c in ppo.curves if c.get("step_s") is not None]
    print(
        f"\nstage-1 step time ({r['rl_batch']} episodes of ≤ {turns} turns): PPO {_mean(q):.1f} s"
        + (f", GRPO {_mean(g):.1f} s (same start and questions), PPO / GRPO {_mean(q) / _mean(g):.2f}×" if g else "")
    )
    named = [(f"PPO (seed {seed})", res) for seed, res in runs.items()] + ([("GRPO", grpo)] if grpo else [])
    for name, res in named:
        rewards = " ".join(f"{c['reward']:.3f}" for c in res.curves if c.get("reward") is not None)
        tools = " ".join(f"{c['tool_call_rate']:.2f}" for c in res.curves if c.get("tool_call_rate") is not None)
        val = " → ".join(f"{v['reward']:.3f}" for v in res.validation)
        kept = getattr(res, "chosen_step", None)
        print(
            f"stage 1 {name}: reward {rewards}; tool-call rate {tools}; validation {val or '–'}; "
            f"kept step {kept}; {res.selection}"
        )
    examples = warm.examples if warm.examples is not None else min(len(usable), r["max_examples"]) - len(warm.dropped)
    print(f"warm start: {examples} trajectories, loss {warm.losses[0]:.3f} → {warm.losses[-1]:.3f}")
    for name, res in (("RL → DPO", dpo), ("NoPPO", no_ppo), ("NoCurriculum", no_cur)):
        if res is not None:
            print(f"{name}: pairs {res['pairs']} ({res['report'].get('dropped')})")
    print("wall: " + ", ".join(f"{k} {v:.0f} s" for k, v in wall.items()))
    summary = {
        "systems": {
            n: {k: e["summary"][k] for k in ("em", "em_ci", "f1", "f1_ci", "vf", "vc")}
            for n, e in report["systems"].items()
            if e.get("summary")
        },
        "step_s": {"grpo": _mean(g), "ppo": _mean(q)},
        "chosen_step": {seed: getattr(res, "chosen_step", None) for seed, res in runs.items()},
        "wall_s": wall,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
