"""What a consumer is: a name (= its consumer group), the topics and event types it reacts to, a handler."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bus_schemas.envelope import Event
from infra.bus.records import DEFAULT_MAX_POLL_INTERVAL_S

Handler = Callable[[Event, Any], Sequence[Event]]
"""A plain function of (event, ports) returning the events to publish; it must not publish itself."""


@dataclass(frozen=True)
class ConsumerSpec:
    name: str
    topics: tuple[str, ...]
    handle: Handler
    event_types: frozenset[str] = field(default_factory=frozenset)  # empty = every event on the topics
    version: str = "0.1.0"
    # Called before each batch is handled (e.g. to mark a cached view of the log stale); None = nothing.
    on_batch: Callable[[], None] | None = None
    # The longest a polled batch may take to handle. On Kafka the member's max.poll.interval is sized from it:
    # a member that does not poll within that interval leaves its group, and its partitions (with the request
    # it is still working on) go to another member. Long work (training) sets it explicitly.
    max_handle_s: float = DEFAULT_MAX_POLL_INTERVAL_S
    # The handler's blobs are referenced by its output events only (no registry entry or other effect outside the
    # bus points at them): a batch's blobs are then written unsynced and made durable together just before its
    # outputs are published (infra.blobs.group_commit: one filesystem sync per batch on the local blob directory
    # instead of an fsync per blob). Off for a handler that hands a blob to anything else before returning.
    group_commit_blobs: bool = False

    @property
    def group(self) -> str:
        return f"flywheel.{self.name}"

    def accepts(self, event: Event) -> bool:
        return not self.event_types or event.event_type in self.event_types

    def wants(self, declared_type: str | None) -> bool:
        """Whether to decode a record whose ``event_type`` header says ``declared_type`` (None: no header).

        Records of other types are skipped unread; a record with no header is decoded (and dead-lettered if it
        is not an event). Live runners and replay both decide with this, so they see the same inputs."""
        return not self.event_types or declared_type is None or declared_type in self.event_types
