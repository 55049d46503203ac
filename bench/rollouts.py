"""Rollout throughput end to end: episodes/s and steps/s of the rollout worker on the embedded bus and on
Kafka, vs the same harness + sandbox episodes without a bus (baseline), all in this run.

Every path runs the same reference-solver episodes with the same file blob store; the bus paths add
what a worker does (task lookup, request consumption, one durable publish per event, commit per
request). Target: bus overhead <= 30 % on the embedded bus. Needs the local stack for the Kafka row.

    .venv/bin/python bench/rollouts.py [--episodes 96] [--kafka 127.0.0.1:19092] [--no-kafka]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rollout_requests import scripted_requests, warmup_tasks

from bus_schemas.events.tasks import TaskSpecified
from harness_service.config import HarnessConfig
from harness_service.memory.store import MemoryStore
from harness_service.runner.episode import Harness, RunIds, run_episode
from harness_service.skills.library import SkillLibrary
from infra.blobs.filesystem import FileBlobStore
from infra.blobs.group_commit import GroupCommit
from infra.bootstrap import Ports, open_bus
from infra.events import ensure_topics, publish
from producers.backends.sandbox import SandboxBackend
from producers.pool import EnvironmentPool
from producers.rollout import RolloutWorker
from producers.rollout.versions import SCRIPTED
from producers.rollout.worker import SKILLS_DIR
from producers.tasks import build_task_suite

console = Console()


def _tasks(n: int) -> tuple[list[TaskSpecified], list[TaskSpecified]]:
    """``n`` tasks spread over the suite, and one task of each template outside them to warm up on."""
    suite = build_task_suite("bench")
    timed = [suite[i * len(suite) // n] for i in range(n)]
    return timed, warmup_tasks(suite, timed, len({t.source.template_id for t in suite}))


def bench_baseline(tasks: list[TaskSpecified], store: FileBlobStore) -> tuple[float, int]:
    """Harness + sandbox, events dropped: (seconds, steps). Blobs are made durable as the worker makes them (a
    group commit), once per episode, where the worker syncs before each publish of the episode's events."""
    skills, backend, steps, blobs = SkillLibrary.from_dir(SKILLS_DIR), SandboxBackend(), 0, GroupCommit(store)
    started = time.perf_counter()
    for task in tasks:
        harness = Harness(HarnessConfig(), SCRIPTED["scripted:reference"](task), blobs, lambda e: None, skills)
        steps += run_episode(harness, task, backend, RunIds(run_id="bench"), MemoryStore()).steps
        blobs.sync()
    return time.perf_counter() - started, steps


def bench_bus(bus_url: str, tasks: list[TaskSpecified], blobs: FileBlobStore, state: Path) -> tuple[float, int]:
    """The rollout worker consuming one request per task: (seconds until the last commit, steps)."""
    bus = open_bus(bus_url)
    ensure_topics(bus)
    publish(bus, *tasks)
    requests = scripted_requests(tasks)
    pool = EnvironmentPool()
    pool.register("sandbox", SandboxBackend, 1)
    # One worker and no peers: no stale assignment to wait out, so the post-rebalance checks are off
    # (they cost one scan per request for settle_s after a rebalance; recovery scans still run).
    worker = RolloutWorker(Ports(bus, blobs, None), pool, state_dir=state, claim_grace_s=0.0, settle_s=0.0)  # type: ignore[arg-type]
    worker.step(timeout_s=5)  # joins the group (and takes no request yet): not part of the figure
    publish(bus, *requests)
    started = time.perf_counter()
    while worker.stats.requests < len(requests):
        worker.step()
    elapsed = time.perf_counter() - started
    console.print(f"{bus_url.split(':')[0]}: {worker.stats.scans} recovery scans, {worker.stats.episodes} episodes")
    worker.close()
    bus.close()
    return elapsed, worker.stats.steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=96)
    parser.add_argument("--kafka", default="127.0.0.1:19092", help="bootstrap server of the local stack")
    parser.add_argument("--no-kafka", action="store_true", help="only the baseline and the embedded bus")
    args = parser.parse_args()
    tasks, warmup = _tasks(args.episodes)
    tmp = Path(tempfile.mkdtemp(prefix="bench-rollouts-"))
    bench_baseline(warmup, FileBlobStore(tmp / "warm-up"))  # imports, every template's tool schemas: no figure
    rows = {"harness + sandbox, no bus (baseline)": bench_baseline(tasks, FileBlobStore(tmp / "b0"))}
    rows["rollout worker, embedded bus"] = bench_bus(
        f"sqlite:///{tmp}/bus.db", tasks, FileBlobStore(tmp / "b1"), tmp / "s1"
    )
    if not args.no_kafka:
        url = f"kafka://{args.kafka}?session_timeout_s=6&namespace=bench-{uuid.uuid4().hex[:8]}"
        rows["rollout worker, Kafka"] = bench_bus(url, tasks, FileBlobStore(tmp / "b2"), tmp / "s2")
    base_s, _ = next(iter(rows.values()))
    table = Table(title=f"rollouts: {len(tasks)} reference-solver episodes, one worker")
    for column in ("path", "episodes/s", "steps/s", "time vs baseline", "bus overhead"):
        table.add_column(column, justify="left" if column == "path" else "right")
    for name, (seconds, steps) in rows.items():
        overhead = seconds / base_s - 1
        table.add_row(
            name,
            f"{len(tasks) / seconds:,.1f}",
            f"{steps / seconds:,.1f}",
            f"{seconds / base_s:.2f}x",
            "-" if seconds is base_s else f"{overhead:+.0%}",
        )
    console.print(table)
    console.print("target: bus overhead <= 30% on the embedded bus")


if __name__ == "__main__":
    main()
