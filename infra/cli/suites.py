"""``flywheel suites check NAME``: an external suite's gold policy must pass every task and an empty one none.

A suite is a plugin (entry point group ``planner_flywheel.suites``): a factory of an object with ``backend`` (the
backend its tasks run on), ``tasks(limit)``, ``gold(task)`` (a policy's actions that solve the task) and
``native(task)`` (the suite's own loop over the same calls, for timing). Every task runs through our real runner
(``run_episode``) with the gold script and with an empty policy, and is judged by the backend's judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress

from bus_schemas.events.tasks import TaskSpecified
from harness_service.config import HarnessBudgets, HarnessConfig
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import Harness, RunIds, run_episode
from infra.blobs.memory import MemoryBlobs
from producers.backends import plugins
from producers.backends.base import Backend
from producers.backends.plugins import SUITES

app = typer.Typer(
    help=f"External benchmark suites installed as plugins (entry point group '{SUITES}').", no_args_is_help=True
)


@dataclass
class CheckReport:
    """What ``suites check`` found: passes of each policy, the failures' reasons, and seconds per episode."""

    tasks: int = 0
    gold_passed: int = 0
    empty_passed: int = 0
    runner_s: float = 0.0
    native_s: float = 0.0
    failures: list[str] | None = None

    @property
    def ok(self) -> bool:
        return self.gold_passed == self.tasks and self.empty_passed == 0


def _episode(
    task: TaskSpecified, backend: Backend, script: list[Any], judge: Any, name: str
) -> tuple[bool, str, float]:
    """Judge one episode of ``script``; also the seconds the runner took (the judge not included)."""
    steps = task.budgets.max_steps if task.budgets is not None else HarnessBudgets().max_steps
    config = HarnessConfig(budgets=HarnessBudgets(max_steps=steps))  # the task's budget, not the default harness's
    harness = Harness(config=config, policy=ScriptedPolicy(script, name), blobs=MemoryBlobs(), events=lambda _: None)
    started = perf_counter()
    outcome = run_episode(harness, task, backend, RunIds(run_id=f"suites-check-{name}"))
    took = perf_counter() - started
    result = judge(task, backend.evidence(), outcome.answer or "")
    failed = [f"{c.id}: {c.detail}" for c in result.criteria if not c.passed]
    return bool(result.outcome), "; ".join(failed) or f"ended {outcome.reason}", took


def check_suite(name: str, limit: int | None = None, progress: Progress | None = None) -> CheckReport:
    """Run the suite's tasks with the gold and the empty policy through the runner, and its own loop."""
    suite = plugins.make_suite(name)
    backend = plugins.make_backend(suite.backend)
    judge = plugins.judge(suite.backend)
    if judge is None:
        raise plugins.PluginError(f"backend {suite.backend!r} of suite {name!r} has no judge")
    tasks = suite.tasks(limit)
    report = CheckReport(tasks=len(tasks), failures=[])
    bar = progress.add_task(f"suite {name}", total=len(tasks)) if progress is not None else None
    for task in tasks:
        passed, why, took = _episode(task, backend, suite.gold(task), judge, "gold")
        report.runner_s += took
        report.gold_passed += passed
        if not passed:
            report.failures.append(f"gold {task.task_id}: {why}")  # type: ignore[union-attr]
        passed, why, _ = _episode(task, backend, [], judge, "empty")
        report.empty_passed += passed
        if passed:
            report.failures.append(f"empty {task.task_id}: passed ({why})")  # type: ignore[union-attr]
        started = perf_counter()
        suite.native(task)
        report.native_s += perf_counter() - started
        if progress is not None and bar is not None:
            progress.advance(bar)
    backend.close()
    return report


@app.command("check")
def check(
    name: Annotated[str, typer.Argument(help="The suite's entry point name, e.g. bfcl.")],
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N tasks.")] = None,
) -> None:
    """Replay the suite's ground truth as the policy (all must pass) and an empty policy (all must fail).

    Prints the counts and the time per gold episode of our runner (reset, contexts, parsing, steps, events and
    evidence, in memory; the judge excluded) against the suite's own loop over the same calls. Exits 1 unless
    gold passes all and empty none.
    """
    console = Console(stderr=True)
    with Progress(console=console, transient=True) as progress:
        report = check_suite(name, limit, progress)
    for line in (report.failures or [])[:20]:
        console.print(f"[red]{line}[/red]", markup=True, highlight=False)
    n = report.tasks
    typer.echo(f"{name}: gold {report.gold_passed}/{n} pass, empty {report.empty_passed}/{n} pass")
    if n:
        ours, theirs = report.runner_s / n * 1000, report.native_s / n * 1000
        ratio = f"{ours / theirs:.1f}x" if theirs > 0 else "n/a"
        typer.echo(f"per episode: our runner {ours:.2f} ms, the suite's own loop {theirs:.2f} ms, ratio {ratio}")
    if not report.ok:
        raise typer.Exit(1)


@app.command("list")
def list_suites() -> None:
    """The installed suites: name, backend and task count (what `flywheel run --external-suite` takes)."""
    for name in sorted(plugins.entry_points(SUITES)):
        try:
            suite = plugins.make_suite(name)
        except plugins.PluginError as exc:
            typer.echo(f"{name}: failed to load ({exc})")
            continue
        typer.echo(f"{name}: backend {suite.backend}, {len(suite.tasks())} tasks")
