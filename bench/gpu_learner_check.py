"""GPU check of the learner: the same SFT and RL code on CUDA with bf16 and a larger batch.

Seeds reference episodes into a temporary embedded stack, runs SFT (bf16, batch 64) and two GRPO steps
(G=8) on the GPU, and prints tokens/s and the RL time split. Without CUDA it prints why and exits 0,
so CPU CI skips it.

    .venv/bin/python bench/gpu_learner_check.py [--steps 200] [--base-checkpoint DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--base-checkpoint", type=Path, default=None, help="A local checkpoint (e.g. Qwen3) to tune.")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device (this check runs on a GPU machine; CPU paths are covered by the test suite)")
        return 0

    from harness_service.versions import publish_harness_version
    from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
    from infra.events import ensure_topics, publish_all
    from learner.config import LearnerConfig
    from learner.jobs import current_dataset, planner_tokenizer, seed_reference_episodes, train_tasks, window
    from learner.model import TinyModelConfig, build_tiny_model, load_checkpoint
    from learner.rl import RlSettings, RlState, run_steps
    from learner.rl.loop import PRODUCER
    from learner.rl.services import LocalServices
    from learner.sft import SftSettings, train_sft

    config = LearnerConfig(cold_start_seeds=2, tiny=TinyModelConfig(hidden_size=256, layers=4, heads=8, kv_heads=4))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ports = Ports(
            open_bus(f"sqlite:///{root}/bus.db"),
            open_blob_store(f"file:///{root}/blobs"),
            open_registry(f"sqlite:///{root}/mlflow.db"),
        )
        ensure_topics(ports.bus)
        seed_reference_episodes(ports, config, run_id="gpu-check")
        data = current_dataset(ports, config)
        if args.base_checkpoint is not None:
            model, tokenizer = load_checkpoint(args.base_checkpoint, device="cuda", dtype=torch.bfloat16)
            config = config.model_copy(update={"value_slots": False})  # its own tokenizer has no slot tokens
        else:
            tokenizer = planner_tokenizer(config, data.examples)
            model = build_tiny_model(tokenizer, config.tiny).to("cuda")
        settings = SftSettings(max_steps=args.steps, batch_size=args.batch, bf16=True, logging_steps=50)
        sft = train_sft(model, tokenizer, data.examples, root / "sft", settings=settings, window=window(config))
        print(
            f"SFT on {torch.cuda.get_device_name()}: {sft.steps} steps, loss {sft.train_loss:.3f}, "
            f"{sft.tokens_per_s:,.0f} tokens/s, {sft.wall_time_s:.1f}s"
        )
        state = RlState(model, tokenizer, checkpoints=root / "rl", window=window(config))
        rl = RlSettings(group_size=8, tasks_per_step=8, micro_batch=64)
        pool = train_tasks(config, "gpu-check")
        harness = publish_harness_version(
            ports.registry, ports.blobs, config.harness, producer=PRODUCER, run_id="gpu-check", aliases=("production",)
        )
        publish_all(ports.bus, [*pool, harness])
        services = LocalServices(ports, root / "state")
        try:
            reports, _ = run_steps(
                state,
                ports,
                pool,
                steps=2,
                harness_version=harness.harness_version,
                settings=rl,
                run_id="gpu-check",
                pump=services.pump,
            )
        finally:
            services.close()
        for i, r in enumerate(reports):
            print(
                f"RL step {i}: rollout {r.rollout_s:.1f}s scoring {r.scoring_s:.1f}s update {r.update_s:.1f}s "
                f"episodes {r.episodes} success {r.success_rate:.2f} samples {r.samples} staleness {r.staleness:.0f}"
            )
        ports.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
