"""Which precision trains fastest on this CPU: one LoRA SFT step of a real model with its frozen
base in float32 against the same step in bfloat16 (autocast and a bfloat16 base), same run.

``precision: auto`` (components/llm/precision.py) picks bfloat16 only where the CPU multiplies
it natively (AMX / AVX-512 BF16); this measures whether that is right here. It also times a
1024 × 1024 matmul in both dtypes. Each arm: ``--steps`` optimizer steps of ``run_sft`` on
``--batch`` random sequences of ``--tokens`` tokens (the loss on all of them), after one untimed
warm-up step; the printed ratio is bfloat16 / float32 seconds per step.

    python benchmarks/precision.py [--model qwen2.5-coder-0.5b] [--tokens 128] [--steps 1]
                                   [--precisions float32 bfloat16]

Run it with nothing else on the machine (2 cores).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def matmul_gflops(dtype: object, n: int = 1024, repeats: int = 3) -> float:
    import torch

    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b  # warm-up
    t0 = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return repeats * 2 * n**3 / (time.perf_counter() - t0) / 1e9


def sft_step_seconds(model: Path, precision: str, tokens: int, batch: int, steps: int, threads: int) -> float:
    import random
    from dataclasses import replace

    from components.training.sft import SFTRunConfig, run_sft, sft_example

    rng = random.Random(0)
    examples = [sft_example([], [rng.randrange(100, 20000) for _ in range(tokens)], [1] * tokens) for _ in range(batch)]
    config = SFTRunConfig(batch_size=batch, threads=threads, precision=precision, lora={"r": 16, "alpha": 32})
    with tempfile.TemporaryDirectory() as tmp:
        run_sft(model, examples, Path(tmp) / "warm", replace(config, max_steps=1))
        t0 = time.perf_counter()
        run_sft(model, examples, Path(tmp) / "timed", replace(config, max_steps=steps))
        return (time.perf_counter() - t0) / steps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="qwen2.5-coder-0.5b", help="a registered model name or a local folder")
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--precisions", nargs="+", default=["float32", "bfloat16"], choices=["float32", "bfloat16"])
    args = p.parse_args()

    import torch

    from components.llm.precision import native_bf16, resolve_precision
    from components.llm.registry import model_folder

    torch.set_num_threads(args.threads)
    folder = model_folder(args.model)
    out = {
        "native_bf16": native_bf16(),
        "auto_resolves_to": resolve_precision("auto"),
        "matmul_gflops": {"float32": matmul_gflops(torch.float32), "bfloat16": matmul_gflops(torch.bfloat16)},
    }
    print(f"native bf16: {out['native_bf16']}; auto → {out['auto_resolves_to']}", flush=True)
    print(
        f"matmul 1024²: float32 {out['matmul_gflops']['float32']:.1f} GFLOP/s, "
        f"bfloat16 {out['matmul_gflops']['bfloat16']:.2f} GFLOP/s",
        flush=True,
    )
    step = {}
    for precision in args.precisions:
        step[precision] = sft_step_seconds(folder, precision, args.tokens, args.batch, args.steps, args.threads)
        print(
            f"LoRA SFT step ({args.batch} × {args.tokens} tokens, {folder.name}): {precision} {step[precision]:.1f} s",
            flush=True,
        )
    out["sft_step_s"] = step
    if len(step) == 2:
        out["ratio_bf16_over_fp32"] = step["bfloat16"] / step["float32"]
        faster = "float32" if out["ratio_bf16_over_fp32"] > 1 else "bfloat16"
        print(f"bfloat16 / float32 step time: {out['ratio_bf16_over_fp32']:.2f}×  (auto should pick: {faster})")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
