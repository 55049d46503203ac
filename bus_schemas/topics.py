"""The topic registry: which topic each event goes to, its partition key, and how long the topic keeps it.

Round events get their own ``rounds`` topic keyed by ``run_id`` so one run's rounds stay in order.
Every topic that a replay needs keeps its events forever (retention -1); only work queues and dead
letters expire.
"""

from __future__ import annotations

from dataclasses import dataclass

from bus_schemas.envelope import Event

TOPIC_TASKS = "tasks"
TOPIC_ROLLOUTS = "rollouts"
TOPIC_EPISODES = "episodes"
TOPIC_VERDICTS = "verdicts"
TOPIC_CURATION = "curation"
TOPIC_DIAGNOSES = "diagnoses"
TOPIC_SAMPLING = "sampling"
TOPIC_MODELS = "models"
TOPIC_HARNESS = "harness"
TOPIC_ROUNDS = "rounds"
TOPIC_DEAD_LETTERS = "dead-letters"

KEEP_FOREVER = -1
_DAY_MS = 24 * 60 * 60 * 1000


@dataclass(frozen=True)
class TopicSpec:
    """A topic as the stack creates it; ``key_field`` names the event attribute used as the message key."""

    name: str
    partitions: int
    retention_ms: int  # KEEP_FOREVER (-1) for audit topics
    key_field: str
    event_types: tuple[str, ...]
    description: str


TOPICS: dict[str, TopicSpec] = {
    spec.name: spec
    for spec in (
        TopicSpec(TOPIC_TASKS, 6, KEEP_FOREVER, "task_id", ("TaskSpecified", "TaskRetired"), "The task pool."),
        TopicSpec(
            TOPIC_ROLLOUTS, 12, 14 * _DAY_MS, "task_id", ("RolloutRequested",), "Work orders for rollout workers."
        ),
        TopicSpec(
            TOPIC_EPISODES,
            12,
            KEEP_FOREVER,
            "episode_id",
            ("EpisodeStarted", "ContextBuilt", "ActionTaken", "ActionRejected", "ObservationReturned", "EpisodeEnded"),
            "Every step of every episode.",
        ),
        TopicSpec(TOPIC_VERDICTS, 6, KEEP_FOREVER, "episode_id", ("EpisodeVerified",), "Verifier judgements."),
        TopicSpec(
            TOPIC_CURATION,
            6,
            KEEP_FOREVER,
            "episode_id",
            (
                "TrajectoryAdmitted",
                "TrajectoryRejected",
                "TrajectoryQuarantined",
                "ReviewRequested",
                "ReviewDecided",
            ),
            "Curator decisions and human reviews.",
        ),
        TopicSpec(TOPIC_DIAGNOSES, 6, KEEP_FOREVER, "episode_id", ("FailureDiagnosed",), "Failure attributions."),
        TopicSpec(
            TOPIC_SAMPLING,
            1,
            KEEP_FOREVER,
            "capability",
            ("SamplingPlanUpdated", "TaskGenerationRequested"),
            "Sampling plans and requests for new tasks.",
        ),
        TopicSpec(
            TOPIC_MODELS,
            1,
            KEEP_FOREVER,
            "model_name",
            (
                "TrainingRequested",
                "TrainingRunStarted",
                "TrainingRunCompleted",
                "ModelVersionRegistered",
                "DevSetEvaluated",
                "RewardScheduleSelected",
                "ModelServed",
            ),
            "Training runs, model versions, their evaluations and the versions OpenAI-compatible servers serve.",
        ),
        TopicSpec(
            TOPIC_HARNESS,
            1,
            KEEP_FOREVER,
            "harness_name",
            ("HarnessRevisionProposed", "HarnessRevisionDecided", "HarnessRevisionSkipped", "HarnessVersionPublished"),
            "Harness revisions and published versions.",
        ),
        TopicSpec(TOPIC_ROUNDS, 1, KEEP_FOREVER, "run_id", ("RoundStarted", "RoundCompleted"), "Rounds of the loop."),
        TopicSpec(
            TOPIC_DEAD_LETTERS, 3, 30 * _DAY_MS, "original_key", ("DeadLettered",), "Messages consumers gave up on."
        ),
    )
}

_TOPIC_OF_TYPE: dict[str, TopicSpec] = {name: spec for spec in TOPICS.values() for name in spec.event_types}


def topic_for(event_type: str | type[Event]) -> TopicSpec:
    """The topic an event type is published to; KeyError for a type no topic carries."""
    name = event_type if isinstance(event_type, str) else event_type.__name__
    return _TOPIC_OF_TYPE[name]


def route(event: Event) -> tuple[str, str]:
    """(topic, key) for publishing ``event``; events of one key keep their order."""
    spec = _TOPIC_OF_TYPE[event.event_type]
    return spec.name, str(getattr(event, spec.key_field))
