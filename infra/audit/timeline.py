"""``flywheel episode show ID``: one episode's timeline from the log, with what the services said about it."""

from __future__ import annotations

from collections.abc import Iterator

from bus_schemas.envelope import Event
from bus_schemas.events import (
    ActionTaken,
    ContextBuilt,
    EpisodeEnded,
    EpisodeStarted,
    EpisodeVerified,
    FailureDiagnosed,
    ObservationReturned,
)
from bus_schemas.topics import TOPIC_CURATION, TOPIC_DIAGNOSES, TOPIC_EPISODES, TOPIC_VERDICTS, TOPICS
from infra.bus.partitioner import partition_for_key
from infra.bus.port import Bus
from infra.events import decodable


def episode_events(bus: Bus, episode_id: str) -> list[Event]:
    """Every event about ``episode_id``: its steps (one partition) and the verdict/curation/diagnosis topics."""
    out: list[Event] = []
    for topic in (TOPIC_EPISODES, TOPIC_VERDICTS, TOPIC_CURATION, TOPIC_DIAGNOSES):
        if topic not in bus.topics():
            continue
        partition = (
            partition_for_key(episode_id.encode(), bus.partitions(topic))
            if TOPICS[topic].key_field == "episode_id"
            else None
        )
        out.extend(e for e in decodable(bus.replay(topic, partition=partition)) if e.episode_id == episode_id)
    return out


def run_namespaces(bus: Bus) -> list[str]:
    """The namespaces (``flywheel run`` ids) that hold episodes on ``bus``, sorted: a run's episodes live in its
    own topics (``<run_id>.episodes``), not in the bus's top-level ones."""
    suffix = f".{TOPIC_EPISODES}"
    return sorted(topic.removesuffix(suffix) for topic in bus.topics() if topic.endswith(suffix))


def _brief(value: object, limit: int = 100) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(event: Event) -> Iterator[str]:
    """One or more lines for the timeline."""
    if isinstance(event, EpisodeStarted):
        yield (
            f"started  task={event.task_id} backend={event.backend} ({event.trust_level}) "
            f"policy={event.policy_version} harness={event.harness_version}"
        )
    elif isinstance(event, ContextBuilt):
        yield f"context  step {event.step}: {event.token_count} tokens (blob {event.context.sha256[:12]})"
    elif isinstance(event, ActionTaken):
        yield f"action   step {event.step}: {_brief(event.action.model_dump(mode='json'))}"
    elif isinstance(event, ObservationReturned):
        if event.error is not None:
            yield f"feedback step {event.step}: ERROR {event.error.code}: {_brief(event.error.message)}"
        else:
            changes = f" [{len(event.changes)} state changes]" if event.changes else ""
            yield f"feedback step {event.step}: {_brief(event.result)}{changes}"
    elif isinstance(event, EpisodeEnded):
        yield (
            f"ended    {event.reason} after {event.steps} steps, {event.tool_calls} tool calls, "
            f"{event.input_tokens}+{event.output_tokens} tokens, {event.wall_time_s:.2f}s; "
            f"answer={_brief(event.answer)}"
        )
    elif isinstance(event, EpisodeVerified):
        yield f"verdict  {event.outcome} (score {event.score:.2f}) by verifier {event.verifier_version}"
        for c in event.criteria:
            yield f"           {'PASS' if c.passed else 'FAIL'} {c.criterion_id}: {_brief(c.detail, 80)}"
    elif isinstance(event, FailureDiagnosed):
        yield (
            f"diagnosis {event.attribution} at step {event.step} (confidence {event.confidence:.2f}): "
            f"{_brief(event.explanation)}"
        )
    else:
        reasons = getattr(event, "reasons", None)
        yield f"{event.event_type}" + (f": {', '.join(reasons)}" if reasons else "")
