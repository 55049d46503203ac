"""The report's RL figures: rl_steps and care_schedule per round, GRPO episodes counted
apart from the round's rollouts; so are the sampled retries of failed rollouts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest

from bus_schemas.events import retried_episode, retry_episode_id
from bus_schemas.examples import build_examples
from infra.loop.monitor import RunMonitor, summary_line
from infra.report.model import build_report

pytestmark = pytest.mark.unit
EX = build_examples()


def _episodes(requests: list[dict], episodes: list[tuple[str, str | None, bool]], after: Sequence[dict] = ()) -> list:
    """``requests`` (RolloutRequested fields), then each (episode, group, success) started, ended and verified, then
    the ``after`` events (``event_type`` and fields), one second apart."""
    t0 = EX["RolloutRequested"].occurred_at
    at = iter(t0 + timedelta(seconds=i) for i in range(100))
    out = [EX["RolloutRequested"].model_copy(update={**r, "occurred_at": next(at)}) for r in requests]
    for episode, group, success in episodes:
        out += [
            EX["EpisodeStarted"].model_copy(update={"episode_id": episode, "group_id": group, "occurred_at": next(at)}),
            EX["EpisodeEnded"].model_copy(update={"episode_id": episode, "occurred_at": next(at)}),
            EX["EpisodeVerified"].model_copy(
                update={"episode_id": episode, "outcome": "success" if success else "failure", "occurred_at": next(at)}
            ),
        ]
    return out + [EX[e["event_type"]].model_copy(update={**e, "occurred_at": next(at)}) for e in after]


def _events() -> list:
    return _episodes(
        [
            {"episode_id": "ep-plan", "group_id": "plan-1"},
            {"episode_id": "ep-rl", "group_id": "grpo:1", "group_size": 2},
        ],
        [("ep-plan", "plan-1", False), ("ep-rl", "grpo:1", True), ("ep-rl.g1", "grpo:1", False)],
        [
            {"event_type": "TrainingRunCompleted", "metrics": {"rl_steps": 3.0}},
            {"event_type": "RewardScheduleSelected", "previous": "partial_credit", "schedule": "outcome_only"},
        ],
    )


def _retried() -> list:
    """A failed planned rollout and its two sampled retries (``LoopConfig.failure_retries``), one solved."""
    retry = {"episode_id": retry_episode_id("ep-plan"), "group_id": None, "group_size": 2, "temperature": 0.8}
    return _episodes(
        [{"episode_id": "ep-plan", "group_id": "plan-1"}, retry],
        [("ep-plan", "plan-1", False), ("ep-plan-retry", None, True), ("ep-plan-retry.g1", None, False)],
    )


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


def test_retry_ids_name_their_rollout_whatever_the_member_or_attempt() -> None:
    assert retry_episode_id("ep-1") == retry_episode_id("ep-1.a2") == "ep-1-retry"
    assert [retried_episode(e) for e in ("ep-1-retry", "ep-1-retry.g1", "ep-1-retry.g1.a1")] == ["ep-1"] * 3
    assert retried_episode("ep-1") is None and retried_episode("ep-1.g1") is None


def test_the_report_counts_retries_apart_from_the_planned_rollouts() -> None:
    [row] = build_report("run-0001", _retried()).rounds
    assert (row.episodes, row.solved) == (1, 0) and (row.retry_episodes, row.retry_solved) == (2, 1)


def test_the_round_line_shows_the_retries(tmp_path) -> None:  # noqa: ANN001
    from infra.bootstrap import open_bus
    from infra.events import ensure_topics, publish_all

    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    try:
        ensure_topics(bus)
        publish_all(bus, _retried())
        monitor = RunMonitor(bus, "run-0001")
        monitor.update()
    finally:
        bus.close()
    r = monitor.rounds[1]
    assert (r.verified, r.solved, r.retry_verified, r.retry_solved) == (1, 0, 2, 1)
    assert summary_line(r).startswith("round 1: 0/1 solved, retries 1/2 solved |")
