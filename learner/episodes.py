"""Runs one task through the harness and judges it with the sandbox verifier, in process.

Only the cold-start seeding and the CLI's in-process dev evaluation (``run_eval``) use it; RL does not: its
rollouts go through the bus (``learner.rl``), run by the rollout workers and judged by the verifier consumer.
The events it returns are the same ones those services publish.
"""

from __future__ import annotations

from dataclasses import dataclass

from bus_schemas.envelope import Event, Producer, correlate
from bus_schemas.events.episodes import EpisodeEnded
from bus_schemas.events.tasks import TaskSpecified
from bus_schemas.events.verdicts import CriterionResult, EpisodeVerified
from harness_service.memory.store import MemoryStore
from harness_service.runner.episode import EpisodeOutcome, Harness, RunIds, run_episode
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.verify import verify

VERIFIER_VERSION = "sandbox-verify/1"
PRODUCER = Producer(service="learner", version="0.1.0")


@dataclass(frozen=True)
class JudgedEpisode:
    """An episode's outcome, every event it produced (episode events, then the verdict) and the verdict."""

    outcome: EpisodeOutcome
    events: list[Event]
    verdict: EpisodeVerified


def run_judged_episode(
    harness: Harness, task: TaskSpecified, backend: SandboxBackend, ids: RunIds, seed: int | None = None
) -> JudgedEpisode:
    """Run ``task`` with ``harness`` (whose ``events`` sink must be a list) and verify it from the evidence."""
    events: list[Event] = []
    harness.events = events.append
    memory = MemoryStore() if harness.config.memory.enabled else None
    outcome = run_episode(harness, task, backend, ids, memory, seed)
    ended = next(e for e in reversed(events) if isinstance(e, EpisodeEnded) and e.episode_id == outcome.episode_id)
    result = verify(task, backend.evidence(), outcome.answer or "")
    criteria = [CriterionResult(criterion_id=c.id, passed=c.passed, detail=c.detail[:16384]) for c in result.criteria]
    passed = sum(c.passed for c in criteria)
    verdict = EpisodeVerified(
        **correlate(ended),
        producer=PRODUCER,
        outcome="success" if result.outcome else "failure",
        score=passed / len(criteria) if criteria else 0.0,
        criteria=criteria,
        verifier_version=VERIFIER_VERSION,
    )
    return JudgedEpisode(outcome, [*events, verdict], verdict)
