"""GPU check of the vLLM offline policy: one episode through the harness on the sandbox, with timings.

Run on a GPU machine with the ``gpu`` extra: ``python bench/vllm_check.py --model /path/to/checkpoint``.
Elsewhere it prints why it was skipped and exits 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="local checkpoint directory (nothing is downloaded)")
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args()
    if importlib.util.find_spec("vllm") is None:
        print("SKIPPED: vllm is not installed (install the 'gpu' extra on a GPU machine)")
        return 0
    import torch

    if not torch.cuda.is_available():
        print("SKIPPED: no CUDA GPU")
        return 0
    from harness import run_through_harness, sandbox_tasks  # bench/harness.py, next to this script

    from harness_service.policy.vllm_offline import VLLMPolicy

    started = time.perf_counter()
    policy = VLLMPolicy(args.model, max_tokens=args.max_tokens, gpu_memory_utilization=0.5)
    print(f"engine loaded in {time.perf_counter() - started:.1f}s")
    outcomes, seconds = run_through_harness(lambda task: policy, sandbox_tasks(limit=4))
    steps = sum(o.steps for o in outcomes)
    tokens = sum(o.output_tokens for o in outcomes)
    print(
        f"{len(outcomes)} episodes, {steps} steps, {tokens} output tokens in {seconds:.1f}s "
        f"({tokens / seconds:.0f} tok/s); reasons: {[o.reason for o in outcomes]}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
