"""The CARE reward: task outcome, optional partial credit, and competence-gated cost terms on successes only."""

from __future__ import annotations

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


def shaped_reward(
    succeeded: bool, score: float, cost: EpisodeCost, competence: float, schedule: RewardSchedule
) -> RewardBreakdown:
    """outcome + partial_credit*score - gate(competence)*cost_weight*costs (costs only when ``succeeded``).

    A failed episode is never charged for its cost: charging it would teach a weak policy to give up early.
    """
    gate = competence_gate(competence)
    partial = schedule.partial_credit * score
    raw_cost = (
        schedule.token_cost * (cost.output_tokens + cost.thinking_tokens) / schedule.token_scale
        + schedule.tool_call_cost * cost.tool_calls
        + schedule.step_cost * cost.steps
    )
    charged = gate * schedule.cost_weight * raw_cost if succeeded else 0.0
    return RewardBreakdown(outcome=1.0 if succeeded else 0.0, partial=partial, cost=charged, gate=gate)
