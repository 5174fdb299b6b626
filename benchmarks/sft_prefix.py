"""How much the shared-prefix SFT loss saves: one training step's forward + backward on real
teacher trajectories, the full computation against the common prompt run once per batch
(``components/training/sft.py``, ``span_loss(share_prefix=True)``), alternated in one run.

Teacher trajectories come from a data folder's certified training split (the learning benchmark's
by default, anchored rows cached by ``benchmarks/solver_choice.py``); batches are drawn with a fixed
seed, right-padded as the trainer pads them. It prints, per batch size, the median step time of each
way, their ratio, and the largest difference between the two losses (they must agree).

    python benchmarks/sft_prefix.py [--data DIR] [--model smollm2-135m] [--batches 2 4 8] [--repeats 5]

Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(ROOT / "data" / "benchmarks" / "learning"))
    p.add_argument("--domain-file", default=str(ROOT / "benchmarks" / "learning.yaml"))
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--batches", type=int, nargs="+", default=[2, 4, 8])
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from benchmarks.solver_choice import _inputs, teacher_rows
    from components.llm.registry import model_folder
    from components.tools.episodes import python_cypher_envs
    from components.training.sft import sft_example, span_loss
    from components.training.teacher import certified_teacher_records

    torch.set_num_threads(2)
    data, domain_file = Path(args.data).resolve(), Path(args.domain_file).resolve()
    _cfg, inputs = _inputs(data, domain_file)
    folder = model_folder(args.model, data)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    rows = random.Random(0).sample(teacher_rows(data, domain_file), 4 * max(args.batches))
    with python_cypher_envs(str(inputs["snapshot"].path), max_rounds=2) as make_env:
        records, _ = certified_teacher_records(rows, make_env, tokenizer)
    examples = [sft_example(r.prompt_ids, r.completion_ids, r.loss_mask) for r in records]
    model = AutoModelForCausalLM.from_pretrained(folder)
    model.train()
    out = {"model": args.model, "examples": len(examples), "batches": {}}
    for size in args.batches:
        rng = random.Random(size)
        times: dict[bool, list[float]] = {False: [], True: []}
        worst = 0.0
        for _ in range(args.repeats):
            chosen = rng.sample(examples, size)
            width = max(len(e["input_ids"]) for e in chosen)
            batch = {
                "input_ids": torch.tensor([e["input_ids"] + [0] * (width - len(e["input_ids"])) for e in chosen]),
                "labels": torch.tensor([e["labels"] + [-100] * (width - len(e["labels"])) for e in chosen]),
                "attention_mask": torch.tensor(
                    [[1] * len(e["input_ids"]) + [0] * (width - len(e["input_ids"])) for e in chosen]
                ),
            }
            losses = {}
            for share in (False, True):
                model.zero_grad()
                t0 = time.perf_counter()
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = span_loss(model, batch, share_prefix=share)
                loss.backward()
                times[share].append(time.perf_counter() - t0)
                losses[share] = loss.item()
            worst = max(worst, abs(losses[True] - losses[False]))
        full, shared = statistics.median(times[False]), statistics.median(times[True])
        out["batches"][size] = {"full_s": full, "shared_s": shared, "speedup": full / shared, "max_loss_diff": worst}
        print(
            f"batch {size}: full {full:.2f} s, shared prefix {shared:.2f} s — {full / shared:.2f}× "
            f"(largest loss difference {worst:.2e}, bfloat16 autocast)"
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
