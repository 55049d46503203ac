"""The fixed, documented list of reward schedules the controller may choose from, weakest cost pressure first.

| name | partial credit | cost weight | use |
|---|---|---|---|
| ``partial_credit`` | 0.5 | 0.0 | a beginner: criteria passed count, so groups are rarely all-zero |
| ``outcome_only`` | 0.0 | 0.0 | a sparse, unbiased signal once the policy succeeds sometimes |
| ``cost_aware`` | 0.0 | 1.0 | competent capabilities learn to spend fewer tokens, tool calls and steps |
| ``cost_strict`` | 0.0 | 2.0 | a strong policy: cost pressure doubled |

Cost terms are always scaled by the capability's competence gate, apply only to successful episodes and are
bounded (``rewards.COST_CAP``) so that any success scores above any failure.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class RewardSchedule(BaseModel):
    """One schedule: how much partial credit and how much (gated) cost pressure the reward carries."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    partial_credit: Annotated[float, Field(ge=0.0, lt=1.0)]
    """Weight of the fraction of criteria passed: a failure earns ``partial_credit * score``, a success the full
    ``partial_credit`` (all criteria pass); below 1, so no failure reaches a success."""
    cost_weight: Annotated[float, Field(ge=0.0)]
    """Multiplier of every cost term."""
    token_cost: float = 0.10
    """Penalty per ``token_scale`` output+thinking tokens."""
    tool_call_cost: float = 0.05
    step_cost: float = 0.02
    token_scale: float = 100.0


SCHEDULES: tuple[RewardSchedule, ...] = (
    RewardSchedule(name="partial_credit", partial_credit=0.5, cost_weight=0.0),
    RewardSchedule(name="outcome_only", partial_credit=0.0, cost_weight=0.0),
    RewardSchedule(name="cost_aware", partial_credit=0.0, cost_weight=1.0),
    RewardSchedule(name="cost_strict", partial_credit=0.0, cost_weight=2.0),
)
"""Ordered by cost pressure; the controller moves at most one place along it per decision."""

SCHEDULE_BY_NAME = {s.name: s for s in SCHEDULES}
