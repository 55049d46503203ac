"""The report's RL figures: rl_steps and care_schedule per round, GRPO episodes counted
apart from the round's rollouts."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bus_schemas.examples import build_examples
from infra.loop.monitor import RunMonitor, summary_line
from infra.report.model import build_report

pytestmark = pytest.mark.unit
EX = build_examples()


def _events() -> list:
    t0 = EX["RolloutRequested"].occurred_at
    at = iter(t0 + timedelta(seconds=i) for i in range(100))
    planned = EX["RolloutRequested"].model_copy(
        update={"episode_id": "ep-plan", "group_id": "plan-1", "occurred_at": next(at)}
    )
    grpo = EX["RolloutRequested"].model_copy(
        update={"episode_id": "ep-rl", "group_id": "grpo:1", "group_size": 2, "occurred_at": next(at)}
    )
    out = [planned, grpo]
    for episode, group, success in (
        ("ep-plan", "plan-1", False),
        ("ep-rl", "grpo:1", True),
        ("ep-rl.g1", "grpo:1", False),
    ):
        out += [
            EX["EpisodeStarted"].model_copy(update={"episode_id": episode, "group_id": group, "occurred_at": next(at)}),
            EX["EpisodeEnded"].model_copy(update={"episode_id": episode, "occurred_at": next(at)}),
            EX["EpisodeVerified"].model_copy(
                update={"episode_id": episode, "outcome": "success" if success else "failure", "occurred_at": next(at)}
            ),
        ]
    out += [
        EX["TrainingRunCompleted"].model_copy(update={"metrics": {"rl_steps": 3.0}, "occurred_at": next(at)}),
        EX["RewardScheduleSelected"].model_copy(
            update={"previous": "partial_credit", "schedule": "outcome_only", "occurred_at": next(at)}
        ),
    ]
    return out


def test_rl_steps_care_schedule_and_rl_episodes_per_round() -> None:
    [row] = build_report("run-0001", _events()).rounds
    assert (row.rl_steps, row.care_schedule, row.care_schedule_next) == (3, "partial_credit", "outcome_only")
    assert (row.rl_episodes, row.rl_solved) == (2, 1) and (row.episodes, row.solved) == (1, 0)


def test_the_round_line_shows_the_grpo_steps(tmp_path) -> None:  # noqa: ANN001
    from infra.bootstrap import open_bus
    from infra.events import ensure_topics, publish_all

    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    try:
        ensure_topics(bus)
        events = _events()
        publish_all(
            bus, [*events, EX["ModelVersionRegistered"].model_copy(update={"occurred_at": events[-1].occurred_at})]
        )
        monitor = RunMonitor(bus, "run-0001")
        monitor.update()
    finally:
        bus.close()
    r = monitor.rounds[1]
    assert (r.rl_steps, r.rl_episodes, r.rl_solved, r.care_schedule) == (3, 2, 1, "partial_credit")
    assert r.verified == 1 and "3 GRPO steps (1/2 RL episodes solved, CARE partial_credit)" in summary_line(r)
