"""One training run of the tiny model through the store (``materialize``), as launched by
``tests/components/training/test_multiprocess.py``: plainly (one process) or under ``accelerate
launch`` with several CPU processes (gloo). Not a test module: a script.

    python multiprocess_run.py {sft|lora|grpo} MODEL DB DATA REPORT

Every process writes ``REPORT.<rank>.json`` (what :func:`materialize` returned to it: the landed
folder, its summary — the logged losses; for GRPO the mean rewards, the KL to the start and the
rollouts' valid-format rates — and which
process built that folder); nothing else here writes.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))


def examples() -> list[dict[str, list[int]]]:
    """16 fixed SFT examples of different lengths (some prompt tokens unlabelled)."""
    import random

    from components.training.sft import sft_example

    rng = random.Random(0)
    out = []
    for _ in range(16):
        prompt = [rng.randrange(5, 200) for _ in range(rng.randrange(3, 9))]
        completion = [rng.randrange(5, 200) for _ in range(rng.randrange(2, 12))]
        out.append(sft_example(prompt, completion, [1] * len(completion)))
    return out


def train(mode: str, model: str, db: str, out: Path) -> dict[str, list[float]]:
    """Full or LoRA SFT (4 steps) or multi-turn GRPO in the Python + Cypher sandbox (3 steps), in
    float32 with a global batch of 4 (examples, or completions: 2 questions × 2), whatever the
    number of processes."""
    if mode in ("sft", "lora"):
        from components.training.sft import SFTRunConfig, run_sft

        lora = {"r": 4, "alpha": 8} if mode == "lora" else None
        config = SFTRunConfig(max_steps=4, batch_size=4, learning_rate=1e-2, precision="float32", threads=1, lora=lora)
        return {"losses": run_sft(model, examples(), out, config).losses}

    from tests.components.training.test_training import _tiny_grpo

    def reward(completions: list[str], **kwargs: Any) -> list[float]:  # differs between episodes
        return [len(c) / 100 for c in completions]

    rows = [
        {"prompt": q, "answer": a}
        for q, a in (("Who wrote p2?", "Ann Lee"), ("How many papers are there?", "3"), ("Name an author.", "x"))
        for _ in range(3)
    ]
    result = _tiny_grpo(model, db, rows, reward, out, None, steps=3)  # the GRPO tests' run, micro-batches of 2
    return {
        "losses": result.losses,
        "rewards": result.rewards,
        "kl": [float(h["kl"]) for h in result.log if "kl" in h],
        "valid_format": [h["valid_format"] for h in result.rollouts],
    }


def main() -> None:
    from components.store.artifact import BuildContext, Layer, materialize
    from components.store.ranks import is_main_process, world_size

    mode, model, db, data, report = sys.argv[1:6]
    rank = int(os.environ.get("RANK", "0"))

    def build(inputs: Any, config: Any, out_dir: Path, ctx: BuildContext) -> Any:
        (out_dir / "built_by").write_text(str(rank))
        return layer.artifact(inputs, config, ctx, path=out_dir, summary=train(mode, model, db, out_dir / "model"))

    layer = Layer(
        "mp_train", build, lambda config: {"mode": config}, code=("components.training.grpo", "components.training.sft")
    )
    art = materialize(layer, {}, mode, BuildContext("tiny", Path(data)))
    line = {
        "rank": rank,
        "world": world_size(),
        "main": is_main_process(),
        "path": art.path,
        "fingerprint": art.fingerprint,
        "summary": dict(art.summary),
        "built_by": (Path(art.path) / "built_by").read_text(),
    }
    Path(f"{report}.{rank}.json").write_text(json.dumps(line))


if __name__ == "__main__":
    main()
