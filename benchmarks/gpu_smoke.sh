#!/usr/bin/env bash
# GPU smoke check: a few GRPO steps, single- and multi-turn, on the GPU, printing
# seconds per step and model tokens per completion (benchmarks/train_step.py). Prepared for a
# lent GPU machine; it has NOT been run (no GPU was lent to the task that wrote it).
#
#   benchmarks/gpu_smoke.sh [MODEL_DIR]        # default: the converted SmolLM2 under data/models
#
# Needs the project's .venv with a CUDA torch (`pip install torch==2.13.0` from a CUDA index)
# and, for vLLM generation, the `gpu` extra with constraints/gpu.txt. It stops with a clear
# message when any of that is missing. Budget: well under 8 minutes on one H200.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x "$PY" ] || { echo "no .venv: run 'make test' (or the set-up in the README) first" >&2; exit 2; }
"$PY" - <<'PYEOF' || exit 2
import torch, sys
if not torch.cuda.is_available():
    sys.exit("no CUDA device visible to torch (a CPU torch build, or no GPU): nothing to smoke-test")
print("cuda:", torch.cuda.get_device_name(0), "| torch", torch.__version__)
try:
    import vllm
    print("vllm", vllm.__version__)
except ImportError:
    print("vllm not installed: TRL generates with transformers on the GPU (install the gpu extra for vLLM)")
PYEOF
MODEL="${1:-}"
if [ -z "$MODEL" ]; then
  MODEL="$("$PY" -c 'from components.llm.models import smollm2_hf_dir; print(smollm2_hf_dir())')"
fi
VLLM_FLAG="$("$PY" -c 'import importlib.util as u; print("--vllm" if u.find_spec("vllm") else "")')"
timeout 450 "$PY" benchmarks/train_step.py --model "$MODEL" --steps 4 --turns 3 --tokens-per-turn 64 --batch 16 --generations 8 $VLLM_FLAG
