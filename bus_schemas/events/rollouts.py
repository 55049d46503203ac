"""Rollout requests (topic ``rollouts``): the scheduler's orders to rollout workers."""

from __future__ import annotations

from typing import Annotated, Literal

import uuid_utils
from pydantic import Field

from bus_schemas.envelope import Event, Name
from bus_schemas.events.tasks import BackendKind, Budgets


class RolloutRequested(Event):
    """Run one episode of ``task_id``; the episode id is fixed here so a redelivered request is not run twice."""

    event_type: Literal["RolloutRequested"] = "RolloutRequested"
    schema_version: Literal[2] = 2
    task_id: Name
    episode_id: Name = Field(default_factory=lambda: f"ep-{uuid_utils.uuid7()}")
    policy_version: Name
    harness_version: Name
    backend: BackendKind
    seed: Annotated[int, Field(ge=0, le=2**63 - 1)]
    budgets: Budgets
    group_id: Name | None = None  # episodes of one task sampled together (group-relative advantages)
    group_size: Annotated[int, Field(ge=1, le=256)] = 1  # G independent attempts (episodes) of the task
    temperature: Annotated[float, Field(gt=0.0, le=10.0)] | None = None
    """v2: sample a learned policy at this temperature, member k seeded ``seed + k`` (RL groups); None: the
    policy's own decoding (greedy for the planner)."""


def request_of(episode_id: str) -> str:
    """The request's episode id of a group member's episode (``<id>.g<k>.a<n>`` -> ``<id>``)."""
    return episode_id.split(".", 1)[0]


RETRY_SUFFIX = "-retry"
"""Marks the episodes of a failed rollout's sampled retries: ``<episode id>-retry`` (members ``.g<k>``)."""


def retry_episode_id(episode_id: str) -> str:
    """The request episode id of the sampled retries of the rollout ``episode_id`` (any attempt of it)."""
    return request_of(episode_id) + RETRY_SUFFIX


def retried_episode(episode_id: str) -> str | None:
    """The rollout whose retry ``episode_id`` is (any member or attempt of it), or None when it is no retry."""
    request = request_of(episode_id)
    return request.removesuffix(RETRY_SUFFIX) if request.endswith(RETRY_SUFFIX) else None
