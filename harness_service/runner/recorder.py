"""Publishes one episode's events with a shared envelope, each caused by the one before it."""

from __future__ import annotations

from typing import Any, TypeVar

from bus_schemas.envelope import Event, Producer
from harness_service.ports import EventSink

E = TypeVar("E", bound=Event)


class EpisodeRecorder:
    """Envelope fields (producer, run, round, task, episode, attempt) are fixed; ``causation_id`` chains."""

    def __init__(self, sink: EventSink, envelope: dict[str, Any], cause: str | None) -> None:
        self._sink = sink
        self._envelope = envelope
        self.last_event_id = cause

    @classmethod
    def for_episode(
        cls,
        sink: EventSink,
        producer: Producer,
        *,
        run_id: str,
        task_id: str,
        episode_id: str,
        round: int | None,
        attempt: int | None,
        cause: str | None,
    ) -> EpisodeRecorder:
        envelope = dict(
            producer=producer, run_id=run_id, task_id=task_id, episode_id=episode_id, round=round, attempt=attempt
        )
        return cls(sink, envelope, cause)

    def envelope(self) -> dict[str, Any]:
        """Envelope fields of the next event, for building one before publishing it."""
        return {**self._envelope, "causation_id": self.last_event_id}

    def publish(self, event: E) -> E:
        self._sink(event)
        self.last_event_id = event.event_id
        return event

    def emit(self, event_type: type[E], **fields: Any) -> E:
        return self.publish(event_type(**self.envelope(), **fields))
