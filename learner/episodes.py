"""Runs one task through the harness and judges it with its backend's registered judge, in process.

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
from producers.backends import plugins
from producers.backends.base import Backend

VERIFIER_VERSION = "sandbox-verify/1"
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

    The judge is the one ``backend`` registered (``planner_flywheel.judges``); without one the verdict is
    ``error``, as the verifier consumer gives.
    """
    events: list[Event] = []
    harness.events = events.append
    memory = MemoryStore() if harness.config.memory.enabled else None
    outcome = run_episode(harness, task, backend, ids, memory, seed)
    ended = next(e for e in reversed(events) if isinstance(e, EpisodeEnded) and e.episode_id == outcome.episode_id)
    check = plugins.judge(backend.name)
    if check is None:
        why = f"no verifier for backend {backend.name!r}"
        criteria = [CriterionResult(criterion_id=c.id, passed=False, detail=why) for c in task.criteria]
        success = None
    else:
        result = check(task, backend.evidence(), outcome.answer or "")
        criteria = [
            CriterionResult(criterion_id=r.id, passed=r.passed, detail=r.detail[:16384]) for r in result.criteria
        ]
        success = result.outcome
    passed = sum(c.passed for c in criteria)
    verdict = EpisodeVerified(
        **correlate(ended),
        producer=PRODUCER,
        outcome="error" if success is None else "success" if success else "failure",
        score=passed / len(criteria) if criteria else 0.0,
        criteria=criteria,
        verifier_version=VERIFIER_VERSION,
    )
    return JudgedEpisode(outcome, [*events, verdict], verdict)
