"""The engine's batch bound (``Engine.batch_tokens``): time and peak memory of one batched call
with and without it, in the same run (each variant in its own process, so each peak is its own).

Prompts share a long prefix, as the evaluation's few-shot prompts do (worked examples, schema),
then differ (a question each); every row samples ``--new`` tokens.

    python benchmarks/batch_tokens.py [--model DIR] [--rows 128] [--prompt 2000] [--new 32]

Run it with nothing else on the machine. Prints one line per variant and the ratios (bounded /
unbounded) of wall time and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
UNBOUNDED = 1 << 62


def one(model: str, rows: int, prompt: int, new: int, bound: int, threads: int) -> dict:
    import torch

    from components.llm.base import SamplingParams
    from components.llm.engine import Engine
    from components.llm.transformers_backend import TransformersBackend

    torch.set_num_threads(threads)
    llm = TransformersBackend(model, dtype="float32")
    shared = [(7 + 13 * i) % 5000 + 100 for i in range(prompt)]
    prompts = [shared + [(11 * r + 3 * j) % 5000 + 100 for j in range(16)] for r in range(rows)]
    engine = Engine(llm.model, llm.tokenizer, llm.eos_ids, batch_tokens=bound)
    t0 = time.perf_counter()
    engine.generate(prompts, list(range(rows)), SamplingParams(max_new_tokens=new, temperature=1.0))
    return {
        "bound": "none" if bound == UNBOUNDED else bound,
        "wall_s": round(time.perf_counter() - t0, 1),
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="a local model folder (default: SmolLM2-135M-Instruct)")
    p.add_argument("--rows", type=int, default=128)
    p.add_argument("--prompt", type=int, default=2000, help="tokens of the shared prompt prefix")
    p.add_argument("--new", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--bound", type=int, default=None, help=argparse.SUPPRESS)  # one variant (internal)
    args = p.parse_args()
    from components.llm.registry import model_folder

    model = str(model_folder(args.model))
    if args.bound is not None:
        print(json.dumps(one(model, args.rows, args.prompt, args.new, args.bound, args.threads)))
        return
    from components.llm.engine import Engine

    out = {}
    for bound in (UNBOUNDED, Engine.batch_tokens):
        cmd = [sys.executable, __file__, "--model", model, "--rows", str(args.rows), "--prompt", str(args.prompt)]
        cmd += ["--new", str(args.new), "--threads", str(args.threads), "--bound", str(bound)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        line = next((x for x in done.stdout.splitlines() if x.startswith("{")), None)
        if line is None:  # e.g. killed for memory
            out[bound] = {"bound": bound, "failed": done.returncode, "stderr": done.stderr[-300:]}
        else:
            out[bound] = json.loads(line)
        print(json.dumps(out[bound]), flush=True)
    free, bounded = out[UNBOUNDED], out[Engine.batch_tokens]
    if "wall_s" in free and "wall_s" in bounded:
        print(
            f"bounded / unbounded: wall {bounded['wall_s'] / free['wall_s']:.2f}×, "
            f"peak RSS {bounded['peak_rss_gb'] / free['peak_rss_gb']:.2f}× "
            f"({args.rows} rows, {args.prompt}-token shared prompt, {args.new} new tokens, {Path(model).name})"
        )


if __name__ == "__main__":
    main()
