"""Harness overhead: steps/s of reference-solver episodes through the harness + sandbox vs the sandbox alone.

Both paths run the same tasks, interleaved, in one process. The harness path does everything a rollout
does (context build, blob encoding, parsing, events, memory, skills) with in-memory ports, shared by the
episodes as a rollout worker shares its ports (one harness config, one blob store, a fresh MemoryStore and
Harness per episode); the sandbox path only resets, steps and collects evidence. Also prints the context build
time per step. Timings are this process's CPU time (``time.process_time``): on an idle machine the same as wall
time for these single-threaded paths, on a shared one without the time other jobs held the cores. Even so,
compare the ratio, not the absolute figures.

    .venv/bin/python bench/harness.py [--per-template 4] [--repeats 3]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
from collections.abc import Callable, Sequence

from rich.console import Console
from rich.table import Table

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Event
from bus_schemas.events.tasks import TaskSpecified
from harness_service.config import HarnessConfig
from harness_service.context.builder import BuiltContext, ContextBuilder, ContextInputs
from harness_service.memory.store import MemoryStore
from harness_service.policy.base import Policy
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import EpisodeOutcome, Harness, RunIds, run_episode
from harness_service.skills.library import SkillLibrary
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.skill_docs import SKILLS_DIR
from producers.tasks.runner import run_episode as run_sandbox_only
from producers.tasks.solver import reference_solver
from producers.tasks.suite import build_task_suite

console = Console()
SKILLS = SkillLibrary.from_dir(SKILLS_DIR)
"""Loaded once, as a rollout worker loads its skill library."""
BUILD_SECONDS: list[float] = []


class _Blobs:
    """An in-memory BlobSink that still hashes, as a real store would."""

    def __init__(self) -> None:
        self.bytes = 0

    def put(self, data: bytes, media_type: str) -> BlobRef:
        self.bytes += len(data)
        return BlobRef(sha256=hashlib.sha256(data).hexdigest(), size=len(data), media_type=media_type)


def _timed_build(original: Callable[[ContextBuilder, ContextInputs], BuiltContext]):
    def build(self: ContextBuilder, inputs: ContextInputs) -> BuiltContext:
        started = time.process_time()
        try:
            return original(self, inputs)
        finally:
            BUILD_SECONDS.append(time.process_time() - started)

    return build


def sandbox_tasks(per_template: int = 1, limit: int | None = None) -> list[TaskSpecified]:
    """The first ``per_template`` train instances of every template, in suite order."""
    counts: dict[str, int] = {}
    tasks = []
    for task in build_task_suite("bench-harness"):
        key = task.source.template_id or ""
        if task.split == "train" and counts.get(key, 0) < per_template:
            counts[key] = counts.get(key, 0) + 1
            tasks.append(task)
    return tasks[:limit]


def run_through_harness(
    make_policy: Callable[[TaskSpecified], Policy], tasks: Sequence[TaskSpecified]
) -> tuple[list[EpisodeOutcome], float]:
    """Run every task through the harness on one sandbox backend; returns the outcomes and seconds taken."""
    backend, events = SandboxBackend(), list[Event]()
    config, blobs = HarnessConfig(), _Blobs()  # one harness version and one blob store for all, as in a rollout
    outcomes = []
    started = time.process_time()
    for task in tasks:
        harness = Harness(config, make_policy(task), blobs, events.append, SKILLS)
        outcomes.append(run_episode(harness, task, backend, RunIds(run_id="bench"), MemoryStore()))
        events.clear()
    return outcomes, time.process_time() - started


def run_sandbox_alone(tasks: Sequence[TaskSpecified]) -> tuple[int, float]:
    """Steps and seconds of the same solvers driven straight against the sandbox."""
    backend, steps = SandboxBackend(), 0
    started = time.process_time()
    for task in tasks:
        steps += len(run_sandbox_only(backend, task, lambda t: reference_solver(t)).actions)
    return steps, time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-template", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    tasks = sandbox_tasks(args.per_template)
    ContextBuilder.build = _timed_build(ContextBuilder.build)  # type: ignore[method-assign]
    # warm every per-process cache (tool specs, their schemas and rendered text) on every task: one-time costs are
    # not per-step overhead, and the first repeat would pay them alone
    run_through_harness(lambda t: ScriptedPolicy(reference_solver(t), "reference"), tasks)
    run_sandbox_alone(tasks)
    BUILD_SECONDS.clear()
    harness_rates, sandbox_rates, finished = [], [], 0
    for _ in range(args.repeats):
        outcomes, seconds = run_through_harness(lambda t: ScriptedPolicy(reference_solver(t), "reference"), tasks)
        harness_rates.append(sum(o.steps for o in outcomes) / seconds)
        finished = sum(o.reason == "finished" for o in outcomes)
        steps, seconds = run_sandbox_alone(tasks)
        sandbox_rates.append(steps / seconds)
    harness, sandbox = statistics.median(harness_rates), statistics.median(sandbox_rates)
    builds = sorted(BUILD_SECONDS)
    table = Table(title=f"{len(tasks)} reference episodes x {args.repeats} ({finished} finished through the harness)")
    for column in ("path", "steps/s (median)", "per step"):
        table.add_column(column, justify="right")
    table.add_row("sandbox alone", f"{sandbox:,.0f}", f"{1e6 / sandbox:,.0f} µs")
    table.add_row("harness + sandbox", f"{harness:,.0f}", f"{1e6 / harness:,.0f} µs")
    table.add_row("overhead ratio", f"{sandbox / harness:.1f}x", f"+{1e6 / harness - 1e6 / sandbox:,.0f} µs")
    table.add_row(
        "context build",
        f"p50 {builds[len(builds) // 2] * 1e6:,.0f} µs",
        f"p95 {builds[int(len(builds) * 0.95)] * 1e6:,.0f} µs",
    )
    console.print(table)


if __name__ == "__main__":
    main()
