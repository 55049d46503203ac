"""The CARE reward: task outcome, optional partial credit, and competence-gated, bounded
cost terms on successes only."""

from __future__ import annotations

import math
from dataclasses import dataclass

from learner.care.competence import competence_gate
from learner.care.schedules import RewardSchedule


@dataclass(frozen=True)
class EpisodeCost:
    """What an episode spent (from its EpisodeEnded)."""

    output_tokens: int
    thinking_tokens: int
    tool_calls: int
    steps: int


@dataclass(frozen=True)
class RewardBreakdown:
    """Each term, so runs can log why a reward is what it is."""

    outcome: float
    partial: float
    cost: float
    gate: float

    @property
    def total(self) -> float:
        return self.outcome + self.partial - self.cost


COST_CAP = 0.9
"""The most cost a success can be charged: successes score in (1 - COST_CAP + partial, 1 + partial]."""


def raw_cost(cost: EpisodeCost, schedule: RewardSchedule) -> float:
    """The schedule's weighted cost terms, unbounded (>= 0)."""
    return (
        schedule.token_cost * (cost.output_tokens + cost.thinking_tokens) / schedule.token_scale
        + schedule.tool_call_cost * cost.tool_calls
        + schedule.step_cost * cost.steps
    )


def shaped_reward(
    succeeded: bool, score: float, cost: EpisodeCost, competence: float, schedule: RewardSchedule
) -> RewardBreakdown:
    """Success: ``1 + partial_credit - gate * COST_CAP * (1 - exp(-cost_weight * raw_cost))``;
    failure: ``partial_credit * score`` (score = fraction of criteria passed).

    Any success scores above any failure: a failure earns at most ``partial_credit`` (score <= 1), a success at
    least ``partial_credit + 1 - COST_CAP``. The cost term saturates (longer, costlier successes still rank
    below cheaper ones) and is charged only to successes and only as the capability's competence gate opens:
    charging failures, or letting cost outweigh success, would teach a weak policy to give up early.
    """
    gate = competence_gate(competence)
    if not succeeded:
        partial = schedule.partial_credit * min(1.0, max(0.0, score))
        return RewardBreakdown(outcome=0.0, partial=partial, cost=0.0, gate=gate)
    charged = gate * COST_CAP * -math.expm1(-schedule.cost_weight * raw_cost(cost, schedule))
    return RewardBreakdown(outcome=1.0, partial=schedule.partial_credit, cost=charged, gate=gate)
