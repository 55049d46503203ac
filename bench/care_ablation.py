"""CARE ablation: RL from one SFT checkpoint with and without the competence-gated cost terms.

The cold start has room for cost to differ: on a share (``--detour``) of the demonstrations the reference
solver first makes a harmless read-only call (``clock.now``) before setting the alarm, so the SFT policy
succeeds both with 1 and with 2 tool calls. Both RL arms start from the same weights, see the same tasks in
the same order with the same sampling seeds, and differ only in the reward schedule (``outcome_only`` vs
``cost_aware``; competence starts at 0 and is measured from the rollouts, so the cost gate opens only once
the policy succeeds). Each arm is then evaluated greedily on the same held-out tasks (a suite seed never
trained on); the table shows success, tokens and tool calls per solved task.

    .venv/bin/python bench/care_ablation.py [--sft-steps 400] [--rl-steps 24] [--lr 2e-4] [--detour 0.6]
"""

# ruff: noqa: E402  (HF_HUB_OFFLINE is set before transformers and trl are imported)
from __future__ import annotations

import argparse
import copy
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from producers.backends.sandbox.pools import Split

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rich.console import Console
from rich.table import Table

from bus_schemas.actions import ToolCall
from bus_schemas.events.tasks import TaskSpecified
from harness_service.policy.scripted import ScriptedPolicy, Solver
from harness_service.runner.episode import Harness, RunIds
from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics, publish_all
from learner.care.schedules import SCHEDULE_BY_NAME
from learner.config import LearnerConfig
from learner.episodes import run_judged_episode
from learner.eval import evaluate_dev
from learner.jobs import current_dataset, planner_tokenizer, rl_harness_version, skills, window
from learner.model import PlannerPolicy, build_tiny_model
from learner.rl import RlSettings, RlState, run_steps
from learner.rl.services import LocalServices
from learner.sft import SftSettings, train_sft
from learner.tasks import template_tasks
from producers.backends.sandbox.backend import SandboxBackend
from producers.tasks import reference_solver

TEMPLATES = {"tu.set_alarm"}
DETOUR = ToolCall(name="clock.now", args={})


def tasks(split: Split, seeds: range) -> list[TaskSpecified]:
    return template_tasks("care", seeds, split, lambda t: t.id in TEMPLATES)


def detoured(solver: Solver) -> Solver:
    """The reference plan after one extra read-only call."""
    yield DETOUR
    observation = None
    try:
        action = next(solver)
        while True:
            observation = yield action
            action = solver.send(observation)
    except StopIteration:
        return


def seed_demonstrations(ports: Ports, pool: Sequence[TaskSpecified], config: LearnerConfig, detour: float) -> int:
    """Reference episodes of ``pool``; every task whose index falls in the ``detour`` share takes the detour."""
    publish_all(ports.bus, list(pool))
    backend, passed = SandboxBackend(), 0
    for i, task in enumerate(pool):
        solver = reference_solver(task)
        takes_detour = int((i + 1) * detour) > int(i * detour)  # spread evenly over the pool
        policy = ScriptedPolicy(detoured(solver) if takes_detour else solver, "reference")
        harness = Harness(
            config=config.harness, policy=policy, blobs=ports.blobs, events=lambda e: None, skills=skills()
        )
        judged = run_judged_episode(harness, task, backend, RunIds(run_id="care", cause=task.event_id))
        publish_all(ports.bus, judged.events)
        passed += judged.verdict.outcome == "success"
    return passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sft-steps", type=int, default=400)
    parser.add_argument("--rl-steps", type=int, default=24)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--detour", type=float, default=0.6)
    args = parser.parse_args()
    config = LearnerConfig()
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ports = Ports(
            open_bus(f"sqlite:///{root}/bus.db"),
            open_blob_store(f"file:///{root}/blobs"),
            open_registry(f"sqlite:///{root}/mlflow.db"),
        )
        ensure_topics(ports.bus)
        train = tasks("train", range(2, 26))
        passed = seed_demonstrations(ports, train, config, args.detour)
        data = current_dataset(ports, config)
        tokenizer = planner_tokenizer(config, data.examples)
        base = build_tiny_model(tokenizer, config.tiny)
        train_sft(
            base,
            tokenizer,
            data.examples,
            root / "sft",
            window=window(config),
            settings=SftSettings(max_steps=args.sft_steps, learning_rate=3e-3),
        )
        pool, held_out = tasks("train", range(30, 36)), tasks("train", range(40, 42))
        publish_all(ports.bus, pool)  # the rollout workers learn tasks from the bus
        harness_version = rl_harness_version(ports, config, "care", 0)
        table = Table(
            title=(
                f"CARE ablation: {passed} demonstrations ({args.detour:.0%} with a detour call), {args.sft_steps} SFT "
                f"steps, {args.rl_steps} RL steps per arm (4 tasks x G=4, lr {args.lr}), {len(held_out)} held-out tasks"
            )
        )
        for column in (
            "arm",
            "success",
            "output tokens / solved",
            "tokens / solved",
            "tool calls / solved",
            "train success (last 4 steps)",
        ):
            table.add_column(column)

        def evaluate(model, name: str, train_success: str) -> None:  # noqa: ANN001
            policy = PlannerPolicy(model, tokenizer, name=name, window=window(config))
            report = evaluate_dev(
                policy,
                held_out,
                config=config.harness,
                skills=skills(),
                blobs=ports.blobs,
                publish=lambda e: None,
                run_id="care",
                model_name="planner",
                model_version=name,
            )
            solved = [e.outcome for e in report.episodes if e.verdict.outcome == "success"]
            n = max(1, len(solved))
            table.add_row(
                name,
                f"{report.success_rate:.3f}",
                f"{sum(o.output_tokens for o in solved) / n:.1f}",
                f"{sum(o.input_tokens + o.output_tokens for o in solved) / n:.0f}",
                f"{sum(o.tool_calls for o in solved) / n:.2f}",
                train_success,
            )

        evaluate(base, "SFT start", "")
        for arm in ("outcome_only", "cost_aware"):
            model = copy.deepcopy(base)
            state = RlState(
                model, tokenizer, checkpoints=root / f"rl-{arm}", window=window(config), schedule=SCHEDULE_BY_NAME[arm]
            )
            settings = RlSettings(group_size=4, tasks_per_step=4, seed=7, learning_rate=args.lr)
            services = LocalServices(ports, root / f"services-{arm}")  # same tasks, order and seeds in both arms
            try:
                reports, _ = run_steps(
                    state,
                    ports,
                    pool,
                    steps=args.rl_steps,
                    harness_version=harness_version,
                    settings=settings,
                    run_id=f"care-{arm}",
                    pump=services.pump,
                )
            finally:
                services.close()
            last = reports[-4:]
            evaluate(model, arm, f"{sum(r.success_rate for r in last) / len(last):.2f}")
        console.print(table)
        ports.close()


if __name__ == "__main__":
    main()
