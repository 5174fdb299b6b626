"""Peak memory of one full-weight GRPO update of the CPU Solver, with and without activation
checkpointing, same run.

One update as GraphCert GRPO makes it (``components/training/grpo.py``): float32 master weights,
bfloat16 autocast where the precision resolves to it, one micro-batch of ``--rows`` multi-turn
completions of ``--length`` tokens scored by :func:`~components.training.grpo.span_logps`
(backward through the whole sequence), then an AdamW step (its two float32 moments). Each variant
runs in its own process, so its peak resident set is its own; printed: peak RSS, seconds of the
update, and the ratios checkpointing / plain. The learning arms' sequences (prompt with schema and
worked examples + three turns with observations) reach ≈ 2,000 tokens.

    python benchmarks/rl_memory.py [--model qwen2.5-coder-0.5b] [--rows 2] [--length 2048]

Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def one(model_name: str, rows: int, length: int, checkpointing: bool) -> dict[str, float]:
    """One update in this process: its seconds and this process's peak RSS (GB)."""
    import resource
    import time

    import torch

    from components.llm.precision import resolve_precision
    from components.llm.registry import model_folder
    from components.training._common import load
    from components.training.grpo import span_logps

    model, _ = load(model_folder(model_name), threads=2)
    model.train()
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    optim = torch.optim.AdamW(model.parameters(), lr=1e-6)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (rows, length), generator=gen)
    mask = torch.ones_like(ids)
    keep = length // 2  # the completion: the last half, scored where the model wrote it
    scored = torch.ones(rows, keep, dtype=torch.long)
    bf16 = resolve_precision("auto") == "bfloat16"
    start = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        logps, _ = span_logps(model, ids, mask, keep, scored)
    (-logps.mean()).backward()
    optim.step()
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="qwen2.5-coder-0.5b")
    p.add_argument("--rows", type=int, default=2, help="completions per micro-batch (GRPO's micro_batch)")
    p.add_argument("--length", type=int, default=2048, help="tokens per completion, prompt included")
    p.add_argument("--variant", choices=("plain", "checkpointing"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.variant:
        print(json.dumps(one(args.model, args.rows, args.length, args.variant == "checkpointing")))
        return
    results = {}
    for variant in ("plain", "checkpointing"):
        cmd = [sys.executable, __file__, "--model", args.model, "--rows", str(args.rows)]
        out = subprocess.run([*cmd, "--length", str(args.length), "--variant", variant], capture_output=True, text=True)
        if out.returncode:
            results[variant] = {"error": f"exit {out.returncode}: {out.stderr.strip()[-300:]}"}
        else:
            results[variant] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{variant:>13}: {results[variant]}", flush=True)
    plain, ckpt = results["plain"], results["checkpointing"]
    if "error" not in plain and "error" not in ckpt:
        print(
            f"checkpointing / plain: peak RSS {ckpt['peak_rss_gb'] / plain['peak_rss_gb']:.2f}x, "
            f"update time {ckpt['seconds'] / plain['seconds']:.2f}x"
        )
    print(json.dumps({"model": args.model, "rows": args.rows, "length": args.length, **results}))


if __name__ == "__main__":
    main()
