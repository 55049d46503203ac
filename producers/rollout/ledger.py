"""What a request already produced, read back from the ``episodes`` log (the bus is the only shared truth).

Workers on any machine may pick up a redelivered request, so a worker-local ledger cannot know what a
dead peer started; the log can. The scan replays, from shortly before the request was created, only
the ``episodes`` partitions its episode ids hash to, and is only needed for the first request a worker
takes from a partition (see worker.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from bus_schemas.errors import SchemaError
from bus_schemas.events.episodes import ActionRejected, ActionTaken, EpisodeEnded, EpisodeStarted
from bus_schemas.events.rollouts import RolloutRequested
from bus_schemas.topics import TOPIC_EPISODES
from infra.bus.partitioner import partition_for_key
from infra.bus.port import Bus
from infra.events import from_record
from producers.rollout.ids import episode_id_for, parse_episode_id

CLOCK_SKEW = timedelta(minutes=5)
"""Records are found by broker time; a request stamped by a machine whose clock runs ahead is still covered."""


@dataclass
class AttemptRecord:
    """One attempt of one group member as the log shows it."""

    episode_id: str
    attempt: int
    started: EpisodeStarted | None = None
    ended: EpisodeEnded | None = None
    last_event_id: str | None = None
    last_ms: int = 0  # when its latest event was written (a live worker keeps this recent)
    steps: int = 0


@dataclass
class MemberHistory:
    """Every attempt of one group member; ``open`` are started-but-never-ended ones (a dead worker's)."""

    attempts: dict[int, AttemptRecord] = field(default_factory=dict)

    @property
    def completed(self) -> bool:
        return any(a.ended is not None and a.ended.reason != "abandoned" for a in self.attempts.values())

    @property
    def open(self) -> list[AttemptRecord]:
        return [a for _, a in sorted(self.attempts.items()) if a.started is not None and a.ended is None]

    def live(self, now_ms: int, stale_after_s: float) -> list[AttemptRecord]:
        """Open attempts that wrote an event within ``stale_after_s``: a peer may still be running them."""
        return [a for a in self.open if now_ms - a.last_ms < stale_after_s * 1000]

    @property
    def next_attempt(self) -> int:
        return max(self.attempts, default=-1) + 1


def scan_request(bus: Bus, request: RolloutRequested) -> dict[int, MemberHistory]:
    """Group member -> its attempts so far. Reads only the partitions the ids of the request hash to,
    attempt by attempt (attempt a+1 exists only if attempt a started), from just before the request."""
    partitions = bus.partitions(TOPIC_EPISODES)
    history: dict[int, MemberHistory] = {m: MemberHistory() for m in range(request.group_size)}
    scanned: set[int] = set()
    looking_for = {member: 0 for member in range(request.group_size)}
    while looking_for:
        wanted = {partition_for_key(episode_id_for(request, m, a).encode(), partitions) for m, a in looking_for.items()}
        for partition in sorted(wanted - scanned):
            _read_partition(bus, request, partition, history)
        scanned |= wanted
        looking_for = {m: a + 1 for m, a in looking_for.items() if a in history[m].attempts}
    return history


def _read_partition(bus: Bus, request: RolloutRequested, partition: int, history: dict[int, MemberHistory]) -> None:
    for record in bus.replay(TOPIC_EPISODES, since=request.occurred_at - CLOCK_SKEW, partition=partition):
        if record.key is None or not record.key.startswith(request.episode_id.encode()):
            continue
        parsed = parse_episode_id(request, record.key.decode())
        if parsed is None:
            continue
        try:
            event = from_record(record)
        except SchemaError:
            continue
        member, attempt = parsed
        entry = history[member].attempts.setdefault(attempt, AttemptRecord(record.key.decode(), attempt))
        entry.last_event_id = event.event_id
        entry.last_ms = max(entry.last_ms, record.timestamp_ms)
        if isinstance(event, EpisodeStarted):
            entry.started = event
        elif isinstance(event, EpisodeEnded):
            entry.ended = event
        elif isinstance(event, (ActionTaken, ActionRejected)):
            entry.steps = max(entry.steps, event.step)
