#!/usr/bin/env bash
# GPU check, unattended (issue 18 item 4): on a machine with a CUDA GPU, in about 8 minutes at most,
#   1. builds and registers a small planner checkpoint, serves it with `vllm serve` through `flywheel serve model`,
#      runs the same rollouts through `openai+http` and through transformers in process on the GPU, and prints
#      episodes/s, steps/s and the ratio (bench/serve_rollouts.py --engine vllm --device cuda);
#   2. runs SFT (bf16) and two GRPO steps on the GPU and prints tokens/s and the RL time split
#      (bench/gpu_learner_check.py);
#   3. runs one episode through the offline vLLM policy on that checkpoint (bench/vllm_check.py).
# The GRPO step trains on the in-process sampler's behaviour log-probs; a served engine's log-probs are not yet
# used by RL. Without a GPU it prints SKIPPED and exits 0. Each step has its own time limit.
#
#   bash bench/gpu_check.sh [episodes (default 32)]
set -euo pipefail
cd "$(dirname "$0")/.."
episodes="${1:-32}"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIPPED: no CUDA GPU here (nvidia-smi finds none); the CPU paths are covered by make test"
    exit 0
fi
nvidia-smi -L
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS="${OMP_NUM_THREADS:-4}"
started=$SECONDS

[ -x .venv/bin/python ] || make install
if ! .venv/bin/python -c "import vllm" >/dev/null 2>&1; then
    echo "== installing the gpu extra (vllm, pinned in pyproject.toml)"
    timeout 240 .venv/bin/uv pip install -q --python .venv/bin/python -e ".[gpu]"
fi

echo "== 1/3 rollouts: vllm serve (openai+http) vs transformers in process, on the GPU"
timeout 240 .venv/bin/python bench/serve_rollouts.py --engine vllm --device cuda --episodes "$episodes" \
    --hidden 256 --max-new-tokens 64

echo "== 2/3 learner: SFT (bf16) and GRPO steps on the GPU"
timeout 150 .venv/bin/python bench/gpu_learner_check.py --steps 100

echo "== 3/3 the offline vLLM policy: one episode"
checkpoint="$(mktemp -d)/planner"
.venv/bin/python - "$checkpoint" <<'EOF'
import sys
from pathlib import Path

from learner.model import TinyModelConfig, build_tiny_model, save_checkpoint, train_tokenizer
from producers.tasks import build_task_suite

tokenizer = train_tokenizer([t.goal for t in build_task_suite("gpu")[:200]], vocab_size=2048)
save_checkpoint(build_tiny_model(tokenizer, TinyModelConfig(hidden_size=256)), tokenizer, Path(sys.argv[1]))
EOF
timeout 120 .venv/bin/python bench/vllm_check.py --model "$checkpoint"

echo "gpu check done in $((SECONDS - started)) s"
