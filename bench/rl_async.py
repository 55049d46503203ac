"""Asynchronous RL: the same GRPO run synchronous (the workers wait while the learner trains) and asynchronous
(``max_staleness=1``: the next step's rollouts are requested before this step's update, so the workers sample
from the pre-update weights while the learner trains), wall time per update and the final dev score.

Both runs start from one SFT checkpoint, take the same number of updates on the same tasks with the same
rollout seeds, through a rollout worker and a verifier that are their own OS processes (``flywheel consume``)
on one embedded bus, as an operator runs them, after one untimed warm-up update. The off-policy correction
(clipped importance ratio against the behaviour log-probs each sampled turn carries) is what makes the
asynchronous run's stale samples usable. The synchronous run is the baseline: the figure is its wall time per
update over the asynchronous one's.

    .venv/bin/python bench/rl_async.py [--steps 6] [--sft-steps 300] [--dev-per-category 4]
"""

# ruff: noqa: E402  (HF_HUB_OFFLINE is set before transformers and trl are imported)
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from rich.console import Console
from rich.table import Table

from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics
from learner.config import LearnerConfig
from learner.jobs import run_eval, run_rl, run_sft, seed_reference_episodes
from learner.rl.loop import RlStepReport


@dataclass(frozen=True)
class Arm:
    name: str
    wall_s: float
    reports: list[RlStepReport]
    dev_overall: float
    dev_per_category: dict[str, float]


def spawn(names: list[str], urls: dict[str, str], state: Path, logs: Path) -> list[subprocess.Popen[bytes]]:
    """The rollout worker and the verifier as ``flywheel consume`` processes, as ``--spawn-consumers`` runs them."""
    procs = []
    for name in names:
        command = [sys.executable, "-m", "infra.cli.main", "consume", name, f"--state-dir={state}"]
        command += [f"--{k}={v}" for k, v in urls.items()]
        env = {**os.environ, "OMP_NUM_THREADS": "1"}  # with the learner's threads, they add up to the cores
        with (logs / f"{name}.log").open("wb") as log:
            procs.append(
                subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
            )
    return procs


def run_arm(name: str, ports: Ports, config: LearnerConfig, version: str, steps: int, staleness: int) -> Arm:
    config = config.model_copy(update={"rl": config.rl.model_copy(update={"max_staleness": staleness})})
    run_id = f"bench-{name}"
    started = perf_counter()
    outcome, reports = run_rl(ports, config, version, steps=steps, run_id=run_id)
    wall_s = perf_counter() - started
    report, _ = run_eval(ports, config, outcome.model_version, run_id=run_id)
    dev = report.evaluated
    return Arm(name, wall_s, reports, dev.overall, {k: v.success_rate for k, v in dev.per_category.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6, help="GRPO updates per run")
    parser.add_argument("--sft-steps", type=int, default=300, help="SFT steps of the shared starting checkpoint")
    parser.add_argument("--dev-per-category", type=int, default=4)
    args = parser.parse_args()
    console = Console(width=max(140, Console().width))
    torch.set_num_threads(max(1, (os.cpu_count() or 2) - 1))  # one core for the rollout worker
    config = LearnerConfig(dev_per_category=args.dev_per_category)
    with tempfile.TemporaryDirectory(prefix="bench-rl-async-") as tmp:
        root = Path(tmp)
        urls = {
            "bus": f"sqlite:///{root}/bus.db",
            "blobs": f"file://{root}/blobs",
            "registry": f"sqlite:///{root}/mlflow.db",
        }
        ports = Ports(open_bus(urls["bus"]), open_blob_store(urls["blobs"]), open_registry(urls["registry"]))
        ensure_topics(ports.bus)
        config = config.model_copy(update={"work_dir": root / "work"})
        console.print(f"cold start: reference episodes, then {args.sft_steps} SFT steps (shared by both runs)")
        seed_reference_episodes(ports, config, run_id="bench")
        start = run_sft(ports, config, run_id="bench", max_steps=args.sft_steps).model_version
        procs = spawn(["rollout-worker", "verifier"], urls, root / "state", root)
        try:
            console.print("warm-up: one untimed update (worker imports, first checkpoint load)")
            run_rl(ports, config, start, steps=1, run_id="bench-warmup")
            arms = []
            for name, staleness in (("sync", 0), ("async", 1)):
                console.print(f"{name}: {args.steps} GRPO updates from {start} (max_staleness={staleness})")
                arms.append(run_arm(name, ports, config, start, args.steps, staleness))
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(30)
            ports.close()
    rl = config.rl
    table = Table(
        title=(
            f"GRPO, {args.steps} updates of {rl.tasks_per_step} tasks x G={rl.group_size}, one rollout worker and "
            f"one verifier process, {os.cpu_count()} cores"
        )
    )
    categories = sorted(arms[0].dev_per_category)
    for column in ("run", "s/update", "vs sync", "rollout wait s", "update s", "staleness", "success", "dev"):
        table.add_column(column, justify="left" if column == "run" else "right")
    for category in categories:
        table.add_column(category.replace("_", " "), justify="right")
    base = arms[0].wall_s
    for arm in arms:
        n = max(1, len(arm.reports))
        table.add_row(
            arm.name,
            f"{arm.wall_s / n:.1f}",
            f"{base / arm.wall_s:.2f}x",
            f"{sum(r.rollout_s for r in arm.reports) / n:.1f}",
            f"{sum(r.update_s for r in arm.reports) / n:.1f}",
            f"{sum(r.staleness for r in arm.reports) / n:.2f}",
            f"{sum(r.success_rate for r in arm.reports) / n:.2f}",
            f"{arm.dev_overall:.3f}",
            *(f"{arm.dev_per_category.get(c, 0.0):.2f}" for c in categories),
        )
    console.print(table)
    console.print("speed-up: sync wall time / async wall time (per update, registration included); dev: after")


if __name__ == "__main__":
    main()
