"""Sampled retries of failed rollouts (``LoopConfig.failure_retries``) are counted apart from the round's planned
rollouts, in the report and in the round line."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bus_schemas.events import retried_episode, retry_episode_id
from bus_schemas.examples import build_examples
from infra.bootstrap import open_bus
from infra.events import ensure_topics, publish_all
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
    retry = EX["RolloutRequested"].model_copy(
        update={
            "episode_id": retry_episode_id("ep-plan"),
            "group_id": None,
            "group_size": 2,
            "temperature": 0.8,
            "occurred_at": next(at),
        }
    )
    out = [planned, retry]
    for episode, success in (("ep-plan", False), ("ep-plan-retry", True), ("ep-plan-retry.g1", False)):
        out += [
            EX["EpisodeStarted"].model_copy(update={"episode_id": episode, "group_id": None, "occurred_at": next(at)}),
            EX["EpisodeEnded"].model_copy(update={"episode_id": episode, "occurred_at": next(at)}),
            EX["EpisodeVerified"].model_copy(
                update={"episode_id": episode, "outcome": "success" if success else "failure", "occurred_at": next(at)}
            ),
        ]
    return out


def test_retry_ids_name_their_rollout_whatever_the_member_or_attempt() -> None:
    assert retry_episode_id("ep-1") == retry_episode_id("ep-1.a2") == "ep-1-retry"
    assert [retried_episode(e) for e in ("ep-1-retry", "ep-1-retry.g1", "ep-1-retry.g1.a1")] == ["ep-1"] * 3
    assert retried_episode("ep-1") is None and retried_episode("ep-1.g1") is None


def test_the_report_counts_retries_apart_from_the_planned_rollouts() -> None:
    [row] = build_report("run-0001", _events()).rounds
    assert (row.episodes, row.solved) == (1, 0) and (row.retry_episodes, row.retry_solved) == (2, 1)


def test_the_round_line_shows_the_retries(tmp_path) -> None:  # noqa: ANN001
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    try:
        ensure_topics(bus)
        publish_all(bus, _events())
        monitor = RunMonitor(bus, "run-0001")
        monitor.update()
    finally:
        bus.close()
    r = monitor.rounds[1]
    assert (r.verified, r.solved, r.retry_verified, r.retry_solved) == (1, 0, 2, 1)
    assert summary_line(r).startswith("round 1: 0/1 solved, retries 1/2 solved |")
