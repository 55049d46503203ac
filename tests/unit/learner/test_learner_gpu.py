"""The GPU check (bench/gpu_learner_check.py): SFT + RL steps on CUDA with bf16; skipped on CPU machines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "gpu_learner_check.py"


def test_sft_and_rl_steps_run_on_a_gpu() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the learner's GPU path is checked on a GPU machine")
    result = subprocess.run([sys.executable, str(SCRIPT), "--steps", "50"], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "SFT on" in result.stdout and "RL step 1" in result.stdout
