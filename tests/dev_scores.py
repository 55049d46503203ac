"""The dev scores tests publish: a DevSetEvaluated whose Overall is the weighted formula of its category rates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bus_schemas.events.training import CategoryScore, DevSetEvaluated, overall_score


def dev_evaluated(rates: Mapping[str, float], *, tasks: int = 8, **fields: Any) -> DevSetEvaluated:
    """Success ``rates`` per category over ``tasks`` tasks each; ``fields`` set the envelope, model and harness."""
    return DevSetEvaluated(
        **{
            "per_category": {k: CategoryScore(success_rate=v, tasks=tasks) for k, v in rates.items()},
            "overall": overall_score(rates),
            "tokens_per_task": 1.0,
            "tool_calls_per_task": 1.0,
            **fields,
        }
    )
