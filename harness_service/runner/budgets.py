"""Effective episode budgets: the stricter of the harness config and the task's own limits."""

from __future__ import annotations

from bus_schemas.events.tasks import Budgets
from harness_service.config import HarnessBudgets


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def effective_budgets(harness: HarnessBudgets, task: Budgets | None, max_steps: int | None = None) -> Budgets:
    """Steps and tokens capped by both; tool-call and wall-time limits come from the task only."""
    task = task or Budgets()
    return Budgets(
        max_steps=min(harness.max_steps, task.max_steps, max_steps or harness.max_steps),
        max_tokens=_min(harness.max_total_tokens, task.max_tokens),
        max_tool_calls=task.max_tool_calls,
        max_wall_s=task.max_wall_s,
    )
