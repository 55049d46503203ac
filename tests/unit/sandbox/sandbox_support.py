"""Test helpers: a task exposing every tool over the seed-0 train world, and a way to replay calls."""

from __future__ import annotations

from typing import Any

from bus_schemas.actions import ToolCall
from bus_schemas.envelope import Producer
from bus_schemas.events.tasks import InitialConditions, NoCollateralCriterion, TaskSource, TaskSpecified
from producers.backends.base import Observation
from producers.backends.sandbox.apps.settings.model import PERMISSIONS
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.catalog import TOOLS


def open_task(fixtures: dict[str, Any] | None = None, task_id: str = "test/all-tools") -> TaskSpecified:
    return TaskSpecified(
        producer=Producer(service="tests", version="0"),
        run_id="tests",
        task_id=task_id,
        goal="exercise the tools",
        apps=[],
        tools=list(TOOLS),
        initial_conditions=InitialConditions(seed=0, fixtures=fixtures or {}),
        category="tool_use",
        tags=[],
        difficulty=1,
        split="train",
        backend="sandbox",
        criteria=[NoCollateralCriterion(id="none", description="-", allowed_paths=[])],
        source=TaskSource(kind="human"),
    )


def permissions(granted: bool) -> dict[str, Any]:
    return {f"/settings/permissions/{p}": granted for p in PERMISSIONS} | {"/settings/values/bluetooth": True}


GRANTED = open_task(permissions(True), "test/granted")
DENIED = open_task(permissions(False), "test/denied")


def replay(backend: SandboxBackend, task: TaskSpecified, calls: list[tuple[str, dict[str, Any]]]) -> Observation:
    """Reset and run the calls; the last observation."""
    obs = backend.reset(task)
    for name, args in calls:
        obs = backend.step(ToolCall(name=name, args=args))
    return obs
