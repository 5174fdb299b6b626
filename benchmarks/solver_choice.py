"""Which CPU Solver? SmolLM2-135M-Instruct against Qwen2.5-Coder-0.5B-Instruct, full fine-tuning
against LoRA — chosen by measurement on the validation split.

Every arm is the SFT warm start on the **same** teacher trajectories (the certified training split
of ``benchmarks/learning.yaml``'s data folder: each certified program run for real in the sandbox,
then its answer), one seed, trained for a fixed wall-clock budget (``--minutes``, default 45: the
same compute for every arm, so the smaller model sees more examples; training runs in a child process
that records its own peak memory) and scored with the project's
evaluation on the **validation split** — never the test split or the external questions: EM,
EM on non-boolean questions and grounded EM with 95 % bootstrap CIs, valid-format rate, correct
answers by type. Recorded per arm: optimizer steps and examples seen, training wall time, the
training process's peak memory (``ru_maxrss``), and the evaluation's time.

Arms (``ARMS``: base model, LoRA settings or full fine-tuning, learning rate — common choices for
each, stated, not tuned here):

    smollm2-full    SmolLM2-135M-Instruct, all weights, lr 1e-4 (the cpu presets' rate)
    smollm2-lora    SmolLM2-135M-Instruct, LoRA r 16 / alpha 32 on every linear layer, lr 2e-4
    qwen0.5b-full   Qwen2.5-Coder-0.5B-Instruct (dequantized Q4_K_M), all weights, lr 2e-5
    qwen0.5b-lora   the same, LoRA r 16 / alpha 32, lr 2e-4

Each arm's result lands in ``<data>/solver-choice/<arm>.json`` (a finished arm is not rerun, so
the four ≈ 45-minute arms may run across sessions); ``--table`` prints the Markdown table of the
arms finished so far. The data folder must hold the learning benchmark's certified data and
curriculum (``python benchmarks/learning.py`` or ``graphdojo materialize --domain-file
benchmarks/learning.yaml --asset curriculum_splits``).

    python benchmarks/solver_choice.py --data DIR --arm smollm2-full [--minutes 45]
    python benchmarks/solver_choice.py --data DIR --table

Run it with nothing else on the machine (2 cores: a busy second core slows training and
generation several-fold, and the budget is wall-clock).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: arm → (registered base model, LoRA options or None for full fine-tuning, learning rate)
ARMS: dict[str, tuple[str, dict[str, Any] | None, float]] = {
    "smollm2-full": ("smollm2-135m", None, 1e-4),
    "smollm2-lora": ("smollm2-135m", {"r": 16, "alpha": 32}, 2e-4),
    "qwen0.5b-full": ("qwen2.5-coder-0.5b", None, 2e-5),
    "qwen0.5b-lora": ("qwen2.5-coder-0.5b", {"r": 16, "alpha": 32}, 2e-4),
}
BATCH = 2
SEED = 0


def _inputs(data: Path, domain_file: Path) -> tuple[Any, dict[str, Any]]:
    from components.store import Catalog
    from components.store.artifact import Artifact
    from orchestration.domains import load_domain_file

    cfg = load_domain_file(domain_file)
    catalog = Catalog(data / "catalog.duckdb")
    out = {}
    for key, asset in (
        ("certified", "certified_dataset"),
        ("curriculum", "curriculum_splits"),
        ("snapshot", "graph_snapshot"),
    ):
        rec = catalog.latest(asset, cfg.name)
        if rec is None or rec.path is None:
            raise SystemExit(f"{data} has no {asset} of {cfg.name}: materialize the learning benchmark's data first")
        out[key] = Artifact.from_record(rec)
    return cfg, out


def teacher_rows(data: Path, domain_file: Path) -> list[dict[str, Any]]:
    """The certified training rows, anchored by the names the questions use (cached: anchoring
    runs every program)."""
    from components.training.checkpoint import certified_train_rows

    cache = data / "solver-choice" / "teacher_rows.json"
    if cache.is_file():
        return json.loads(cache.read_text())
    _cfg, inputs = _inputs(data, domain_file)
    rows = certified_train_rows(inputs["certified"], inputs["curriculum"], inputs["snapshot"])
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(rows, default=str))
    return rows


def train_arm(data: Path, domain_file: Path, arm: str, minutes: float, out_dir: Path) -> dict[str, Any]:
    """The arm's SFT (run in a child process, so its peak memory is its own)."""
    from transformers import AutoTokenizer

    from components.llm.registry import model_folder
    from components.tools.episodes import python_cypher_envs
    from components.training.sft import SFTRunConfig, run_sft, sft_example
    from components.training.teacher import certified_teacher_records

    name, lora, lr = ARMS[arm]
    _cfg, inputs = _inputs(data, domain_file)
    base = model_folder(name, data)
    tokenizer = AutoTokenizer.from_pretrained(base)
    t0 = time.perf_counter()
    with python_cypher_envs(str(inputs["snapshot"].path), max_rounds=2) as make_env:
        records, dropped = certified_teacher_records(teacher_rows(data, domain_file), make_env, tokenizer)
    teacher_s = time.perf_counter() - t0
    examples = [sft_example(r.prompt_ids, r.completion_ids, r.loss_mask) for r in records]
    t0 = time.perf_counter()
    result = run_sft(
        base,
        examples,
        out_dir,
        SFTRunConfig(
            max_steps=100_000,  # the time budget ends it; the linear schedule stays ≈ constant
            learning_rate=lr,
            batch_size=BATCH,
            max_length=4096,
            seed=SEED,
            threads=2,
            max_seconds=minutes * 60.0,
            lora=lora,
            share_prefix=False,  # every arm on the same code path as the first ones measured
        ),
    )
    return {
        "arm": arm,
        "base_model": name,
        "lora": lora,
        "learning_rate": lr,
        "teacher_trajectories": len(records),
        "teacher_dropped": len(dropped),
        "teacher_s": round(teacher_s, 1),
        "train_s": round(time.perf_counter() - t0, 1),
        "steps": result.steps,
        "examples_seen": result.steps * BATCH,
        "loss_first": result.first_loss,
        "loss_last": result.last_loss,
        "losses": result.losses,
        "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,  # KiB on Linux
    }


def evaluate_arm(data: Path, domain_file: Path, model_dir: Path | None, arm: str) -> dict[str, Any]:
    """The arm's checkpoint on the validation split, one sample per question (``model_dir``
    None: the answer prior, the reference row)."""
    from components.evaluation.questions import split_questions
    from components.evaluation.run import NO_MODEL, SystemSpec, evaluate_systems

    cfg, inputs = _inputs(data, domain_file)
    curriculum, certified = str(inputs["curriculum"].path), str(inputs["certified"].path)
    rows = split_questions(curriculum, certified, "validation")
    config = replace(cfg.evaluate, samples=1, judge=False, max_questions=len(rows))
    spec = (
        SystemSpec(arm, "answer_prior", NO_MODEL, "the most common training answer per (family, answer type)")
        if model_dir is None
        else SystemSpec(arm, "python_cypher", str(model_dir), f"SFT warm start ({arm})")
    )
    t0 = time.perf_counter()
    report = evaluate_systems(
        [spec],
        rows,
        str(inputs["snapshot"].path),
        config,
        judge_model_dir=None,
        train_rows=split_questions(curriculum, certified, "train"),
    )
    system = report["systems"][arm]
    s = system["summary"]
    by_type = system.get("by_answer_type") or {}
    keys = ("em", "em_ci", "em_nonbool", "em_nonbool_ci", "grounded", "grounded_ci", "questions")
    return {
        "split": "validation",
        **{k: s.get(k) for k in keys},
        "valid_format": s.get("vf"),
        "nonbool_questions": s.get("nonbool_questions"),
        "correct_by_type": {t: f"{round(v['em'] * v['records'])}/{v['records']}" for t, v in by_type.items()},
        "eval_s": round(time.perf_counter() - t0, 1),
    }


def table(results: list[dict[str, Any]]) -> str:
    def ci(r: dict[str, Any], k: str) -> str:
        lo, hi = r[k + "_ci"]
        return f"{r[k]:.3f} [{lo:.2f}, {hi:.2f}]"

    lines = [
        "| arm | train s | steps (examples) | peak memory GiB | loss | EM | EM non-bool | grounded EM "
        "| valid format | correct by type |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        e = r["validation"]
        lines.append(
            f"| {r['arm']} | {r['train_s']:.0f} | {r['steps']} ({r['examples_seen']}) | {r.get('peak_gib', 0):.1f} | "
            f"{r['loss_first']:.3f} → {r['loss_last']:.3f} | {ci(e, 'em')} | {ci(e, 'em_nonbool')} | "
            f"{ci(e, 'grounded')} | {e['valid_format']:.2f} | "
            + ", ".join(f"{t} {v}" for t, v in e["correct_by_type"].items())
            + " |"
        )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(ROOT / "data" / "benchmarks" / "learning"))
    p.add_argument("--domain-file", default=str(ROOT / "benchmarks" / "learning.yaml"))
    p.add_argument("--arm", choices=sorted(ARMS))
    p.add_argument("--minutes", type=float, default=45.0, help="training budget per arm (wall clock)")
    p.add_argument("--table", action="store_true", help="print the table of the arms finished so far")
    p.add_argument("--train-only", action="store_true", help=argparse.SUPPRESS)  # the child process
    args = p.parse_args()
    data, domain_file = Path(args.data).resolve(), Path(args.domain_file).resolve()
    out = data / "solver-choice"
    out.mkdir(parents=True, exist_ok=True)
    if args.table:
        done = [json.loads((out / f"{a}.json").read_text()) for a in ARMS if (out / f"{a}.json").is_file()]
        print(table(done) if done else "no arm finished yet")
        prior = evaluate_arm(data, domain_file, None, "answer prior")
        print(
            f"\nanswer prior (no model) on the same questions: EM {prior['em']:.3f}, EM non-bool "
            f"{prior['em_nonbool']:.3f}, grounded {prior['grounded']:.3f}; "
            + ", ".join(f"{t} {v}" for t, v in prior["correct_by_type"].items())
        )
        return
    if not args.arm:
        raise SystemExit("--arm or --table")
    model_dir = out / args.arm
    if args.train_only:
        result = train_arm(data, domain_file, args.arm, args.minutes, model_dir)
        (out / f"{args.arm}.train.json").write_text(json.dumps(result, indent=2))
        return
    final = out / f"{args.arm}.json"
    if final.is_file():
        print(f"{args.arm}: finished before ({final}); delete it to rerun", file=sys.stderr)
        print(json.loads(final.read_text()))
        return
    teacher_rows(data, domain_file)  # anchored once, shared by the arms
    trained = out / f"{args.arm}.train.json"
    if not trained.is_file():
        cmd = [sys.executable, __file__, "--data", str(data), "--domain-file", str(domain_file)]
        subprocess.run([*cmd, "--arm", args.arm, "--minutes", str(args.minutes), "--train-only"], check=True)
    result = json.loads(trained.read_text())
    print(f"{args.arm}: trained {result['steps']} steps in {result['train_s']:.0f} s; evaluating", file=sys.stderr)
    result["validation"] = evaluate_arm(data, domain_file, model_dir, args.arm)
    final.write_text(json.dumps(result, indent=2))
    print(table([result]))


if __name__ == "__main__":
    main()
