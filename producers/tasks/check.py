"""The suite self-check: the reference solver must pass every task, no-op and random policies none."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypedDict

from bus_schemas.events.tasks import TaskSpecified
from producers.backends import plugins
from producers.backends.sandbox.catalog import APP_NAMES, TOOLS
from producers.backends.sandbox.verify import verify
from producers.tasks.runner import Policy, noop_policy, random_policy, run_episode
from producers.tasks.solver import reference_solver

POLICIES: dict[str, Policy] = {"reference": reference_solver, "noop": noop_policy, "random": random_policy}
EXPECT_PASS = {"reference": True, "noop": False, "random": False}


@dataclass
class CheckReport:
    tasks: int = 0
    passed: Counter[str] = field(default_factory=Counter)
    wrong: dict[str, list[str]] = field(default_factory=dict)

    @property
    def green(self) -> bool:
        return not any(self.wrong.values())


def check_suite(tasks: Iterable[TaskSpecified], on_task: Callable[[], None] = lambda: None) -> CheckReport:
    """Run each policy on each task and record passes and every task whose outcome is not the expected one."""
    backend = plugins.make_backend("sandbox")
    report = CheckReport(wrong={name: [] for name in POLICIES})
    for task in tasks:
        report.tasks += 1
        for name, policy in POLICIES.items():
            episode = run_episode(backend, task, policy)
            outcome = verify(task, episode.evidence, episode.answer).outcome
            report.passed[name] += outcome
            if outcome != EXPECT_PASS[name]:
                report.wrong[name].append(task.task_id)
        on_task()
    return report


class SuiteStats(TypedDict):
    apps: int
    tools: int
    tasks: dict[str, dict[str, int]]


def suite_stats(tasks: Iterable[TaskSpecified]) -> SuiteStats:
    """``{"apps": N, "tools": N, "tasks": {category: {split: count}}}``."""
    counts: dict[str, Counter[str]] = {}
    for task in tasks:
        counts.setdefault(task.category, Counter())[task.split] += 1
    return SuiteStats(
        apps=len(APP_NAMES),
        tools=len(TOOLS),
        tasks={c: dict(sorted(s.items())) for c, s in sorted(counts.items())},
    )
