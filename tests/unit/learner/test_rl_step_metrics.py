"""What each GRPO step logs to MLflow (the training run's metric history): reward mean and spread, KL, clipping,
and the CARE reward's schedule and the cost penalty it charged."""

from __future__ import annotations

import pytest

from learner.care.schedules import SCHEDULES
from learner.jobs import rl_history
from learner.rl.loop import RlStepReport

pytestmark = pytest.mark.unit


def report(**figures: float | str) -> RlStepReport:
    base: dict = dict(
        rollout_s=1.0,
        scoring_s=0.1,
        update_s=0.5,
        episodes=8,
        success_rate=0.5,
        mean_reward=0.6,
        groups_used=2,
        samples=40,
        loss=0.3,
        kl=0.01,
        policy_version="local:/x",
    )
    return RlStepReport(**{**base, **figures})


def test_each_step_logs_reward_kl_clipping_and_the_care_schedule_and_penalty():
    schedule = SCHEDULES[-1]
    steps = [
        report(
            reward_std=0.25,
            clip_fraction=0.1,
            care_penalty=0.05,
            care_gate=0.5,
            care_schedule=schedule.name,
            care_cost_weight=schedule.cost_weight,
            care_partial_credit=schedule.partial_credit,
        ),
        report(kl=0.02, care_schedule=schedule.name),
    ]
    history = rl_history(steps, first_step=11)
    assert [step for step, _ in history] == [11, 12]
    first = history[0][1]
    assert {k: first[k] for k in ("rl_mean_reward", "rl_reward_std", "rl_kl", "rl_clip_fraction")} == {
        "rl_mean_reward": 0.6,
        "rl_reward_std": 0.25,
        "rl_kl": 0.01,
        "rl_clip_fraction": 0.1,
    }
    assert first["rl_care_penalty"] == 0.05 and first["rl_care_gate"] == 0.5
    assert first["rl_care_schedule"] == len(SCHEDULES) - 1 and first["rl_care_cost_weight"] == schedule.cost_weight
    assert history[1][1]["rl_kl"] == 0.02
    assert "rl_care_schedule" not in rl_history([report()])[0][1]  # a report without a schedule name logs no index
