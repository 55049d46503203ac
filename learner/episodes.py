"""Runs one task through the harness and judges it as the verifier consumer does, in process.

Only the cold-start seeding and the CLI's in-process dev evaluation (``run_eval``) use it; RL does not: its
rollouts go through the bus (``learner.rl``), run by the rollout workers and judged by the verifier consumer.
The events it returns are the same ones those services publish.
"""

from __future__ import annotations

from dataclasses import dataclass

from bus_schemas.envelope import Event, Producer
from bus_schemas.events.episodes import EpisodeEnded
from bus_schemas.events.tasks import TaskSpecified
from bus_schemas.events.verdicts import EpisodeVerified
from consumers.verifier.handler import judge
from harness_service.memory.store import MemoryStore
from harness_service.runner.episode import EpisodeOutcome, Harness, RunIds, run_episode
from producers.backends.base import Backend

PRODUCER = Producer(service="learner", version="0.1.0")


@dataclass(frozen=True)
class JudgedEpisode:
    """An episode's outcome, every event it produced (episode events, then the verdict) and the verdict."""

    outcome: EpisodeOutcome
    events: list[Event]
    verdict: EpisodeVerified


def run_judged_episode(
    harness: Harness, task: TaskSpecified, backend: Backend, ids: RunIds, seed: int | None = None
) -> JudgedEpisode:
    """Run ``task`` with ``harness`` (whose ``events`` sink must be a list) and verify it from the evidence.

    Judged by the verifier consumer's own function (``consumers.verifier.handler.judge``: the judge ``backend``
    registered, ``error`` without one), so the verdict is the one the verifier would publish.
    """
    events: list[Event] = []
    harness.events = events.append
    memory = MemoryStore() if harness.config.memory.enabled else None
    outcome = run_episode(harness, task, backend, ids, memory, seed)
    ended = next(e for e in reversed(events) if isinstance(e, EpisodeEnded) and e.episode_id == outcome.episode_id)
    verdict = judge(ended, task, backend.name, backend.evidence(), PRODUCER)
    return JudgedEpisode(outcome, [*events, verdict], verdict)
