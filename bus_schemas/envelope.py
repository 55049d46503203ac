"""The envelope every event carries: identity, type and version, time, producer and correlation ids."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import uuid_utils
from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

EventId = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")]
"""A canonical lower-case UUID string; new ids are UUIDv7 so they sort by creation time."""

Name = Annotated[str, StringConstraints(min_length=1, max_length=256)]
"""A non-empty identifier or version label (task id, model name, ...)."""

Text = Annotated[str, StringConstraints(max_length=16384)]
"""Human-readable prose (reasons, summaries); anything longer belongs in a blob."""

Probability = Annotated[float, Field(ge=0.0, le=1.0)]
Count = Annotated[int, Field(ge=0, le=2**63 - 1)]


def _to_utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


UtcDatetime = Annotated[AwareDatetime, AfterValidator(_to_utc)]
"""A timezone-aware timestamp, normalised to UTC so the wire form is always ``...Z``."""


def new_event_id() -> str:
    """A fresh UUIDv7 string: unique, and ordered by creation time."""
    return str(uuid_utils.uuid7())


def utc_now() -> datetime:
    """The current time in UTC (the default ``occurred_at``)."""
    return datetime.now(UTC)


class Record(BaseModel):
    """Base of every value object inside an event: immutable, strict, closed to unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class Producer(Record):
    """The service that wrote an event and its version, so replays can tell which code produced what."""

    service: Name
    version: Name


class Event(Record):
    """Base of all events. Subclasses pin ``event_type`` (their class name) and ``schema_version`` as Literals."""

    event_id: EventId = Field(default_factory=new_event_id)
    event_type: str
    schema_version: int
    occurred_at: UtcDatetime = Field(default_factory=utc_now)
    producer: Producer
    run_id: Name
    round: Annotated[int, Field(ge=0)] | None = None
    task_id: Name | None = None
    episode_id: Name | None = None
    attempt: Annotated[int, Field(ge=0)] | None = None
    causation_id: EventId | None = None


CORRELATION_FIELDS = ("run_id", "round", "task_id", "episode_id", "attempt")


def correlate(cause: Event) -> dict[str, Any]:
    """Envelope kwargs for an event reacting to ``cause``: its correlation ids, and ``causation_id`` = its id."""
    fields = {name: getattr(cause, name) for name in CORRELATION_FIELDS}
    fields["causation_id"] = cause.event_id
    return fields
