"""CARE ablation: RL from one SFT checkpoint with and without the competence-gated cost terms.

Both arms start from the same weights, see the same tasks in the same order with the same sampling seeds,
and differ only in the reward schedule (``outcome_only`` vs ``cost_aware``). Each arm is then evaluated
greedily on the same held-out tasks (a suite seed never trained on; the official dev split draws values
outside the train ranges, which this budget does not reach); the table shows success and tokens / tool
calls per solved task.

    .venv/bin/python bench/care_ablation.py [--sft-steps 300] [--rl-steps 8] [--lr 2e-4]
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
from pathlib import Path

# bench/learner.py is named like the package: keep bench/ off the import path so `learner` is the package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rich.console import Console
from rich.table import Table

from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics
from learner.care.schedules import SCHEDULE_BY_NAME
from learner.config import LearnerConfig
from learner.dataset.coldstart import seed_cold_start
from learner.eval import evaluate_dev
from learner.jobs import current_dataset, skills, window
from learner.model import PlannerPolicy, build_tiny_model, train_tokenizer
from learner.rl import RlSettings, RlState, rl_step
from learner.sft import SftSettings, train_sft
from learner.tasks import template_tasks

TEMPLATES = {"tu.reminder_due", "tu.set_alarm"}


def tasks(split: str, seeds: range) -> list:
    return template_tasks("care", seeds, split, lambda t: t.id in TEMPLATES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sft-steps", type=int, default=300)
    parser.add_argument("--rl-steps", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-4)
    args = parser.parse_args()
    config = LearnerConfig()
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ports = Ports(open_bus(f"sqlite:///{root}/bus.db"), open_blob_store(f"file:///{root}/blobs"),
                      open_registry(f"sqlite:///{root}/mlflow.db"))
        ensure_topics(ports.bus)
        seed_cold_start(ports, tasks("train", range(2, 26)), config.harness, skills(), run_id="care")
        data = current_dataset(ports, config)
        tokenizer = train_tokenizer((e.prompt + e.completion for e in data.examples), config.vocab_size)
        base = build_tiny_model(tokenizer, config.tiny)
        train_sft(base, tokenizer, data.examples, root / "sft", window=window(config),
                  settings=SftSettings(max_steps=args.sft_steps, learning_rate=3e-3))
        pool, dev = tasks("train", range(30, 32)), tasks("train", range(40, 41))
        table = Table(title=f"CARE ablation: {args.rl_steps} RL steps per arm, {len(dev)} held-out tasks")
        for column in ("arm", "success", "output tokens / solved task", "tokens / solved task", "tool calls / solved task"):
            table.add_column(column)
        for arm in ("outcome_only", "cost_aware"):
            model = copy.deepcopy(base)
            state = RlState(model, tokenizer, version=1, window=window(config), schedule=SCHEDULE_BY_NAME[arm],
                            competence={"tool_use": 1.0})
            settings = RlSettings(group_size=4, tasks_per_step=4, seed=7, learning_rate=args.lr)
            for i in range(args.rl_steps):
                rl_step(state, ports, pool[i * 4 : (i + 1) * 4], config=config.harness, skills=skills(),
                        settings=settings, run_id=f"care-{arm}")
            report = evaluate_dev(PlannerPolicy(model, tokenizer, name=arm, window=window(config)), dev,
                                  config=config.harness, skills=skills(), blobs=ports.blobs, publish=lambda e: None,
                                  run_id="care", model_name="planner", model_version=arm)
            solved = [e.outcome for e in report.episodes if e.verdict.outcome == "success"]
            n = max(1, len(solved))
            table.add_row(arm, f"{report.success_rate:.3f}", f"{sum(o.output_tokens for o in solved) / n:.1f}",
                          f"{sum(o.input_tokens + o.output_tokens for o in solved) / n:.0f}",
                          f"{sum(o.tool_calls for o in solved) / n:.2f}")
        console.print(table)
        ports.close()


if __name__ == "__main__":
    main()
