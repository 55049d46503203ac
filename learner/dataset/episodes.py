"""Reads the event log into per-episode records, remembering the offsets it read up to (the dataset's lineage)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from bus_schemas.envelope import Event
from bus_schemas.events.curation import TrajectoryAdmitted
from bus_schemas.events.episodes import (
    ActionRejected,
    ActionTaken,
    ContextBuilt,
    EpisodeEnded,
    EpisodeStarted,
    ObservationReturned,
)
from bus_schemas.events.sampling import SamplingPlanUpdated
from bus_schemas.events.tasks import TaskSpecified
from bus_schemas.events.verdicts import EpisodeVerified
from bus_schemas.topics import TOPIC_CURATION, TOPIC_EPISODES, TOPIC_SAMPLING, TOPIC_TASKS, TOPIC_VERDICTS
from harness_service.user.simulator import USER_REPLY_FLAG
from infra.bus.port import Bus
from infra.events import decodable

LEARNER_TOPICS = (TOPIC_TASKS, TOPIC_EPISODES, TOPIC_VERDICTS, TOPIC_CURATION, TOPIC_SAMPLING)


@dataclass
class EpisodeRecord:
    """One episode's events by step: contexts, valid actions, rejected outputs (``ActionRejected``), the end."""

    started: EpisodeStarted
    contexts: dict[int, ContextBuilt] = field(default_factory=dict)
    actions: dict[int, ActionTaken] = field(default_factory=dict)
    invalid: dict[int, ActionRejected] = field(default_factory=dict)
    ended: EpisodeEnded | None = None
    user_replies: dict[int, str] = field(default_factory=dict)
    """The simulated user's answers by clarifying step (observations flagged ``user_reply``), for the replay."""

    @property
    def episode_id(self) -> str:
        return self.started.episode_id


@dataclass
class EpisodeLog:
    """Everything the learner needs from the log, indexed; ``offsets`` maps ``topic/partition`` to the end offset."""

    tasks: dict[str, TaskSpecified] = field(default_factory=dict)
    episodes: dict[str, EpisodeRecord] = field(default_factory=dict)
    verdicts: dict[str, EpisodeVerified] = field(default_factory=dict)
    admitted: dict[str, TrajectoryAdmitted] = field(default_factory=dict)
    plan: SamplingPlanUpdated | None = None
    offsets: dict[str, int] = field(default_factory=dict)

    def add(self, event: Event) -> None:
        if isinstance(event, TaskSpecified):
            self.tasks[event.task_id] = event
        elif isinstance(event, EpisodeStarted):
            self.episodes[event.episode_id] = EpisodeRecord(event)
        elif isinstance(event, (ContextBuilt, ActionTaken, ActionRejected, EpisodeEnded)):
            self._add_step(event)
        elif isinstance(event, ObservationReturned) and USER_REPLY_FLAG in event.flags:
            record = self.episodes.get(event.episode_id)
            reply = event.result.get("user") if isinstance(event.result, dict) else None
            if record is not None and isinstance(reply, str):
                record.user_replies[event.step] = reply
        elif isinstance(event, EpisodeVerified):
            self.verdicts[event.episode_id] = event
        elif isinstance(event, TrajectoryAdmitted):
            self.admitted[event.episode_id] = event
        elif isinstance(event, SamplingPlanUpdated):
            self.plan = event  # the latest plan wins

    def _add_step(self, event: ContextBuilt | ActionTaken | ActionRejected | EpisodeEnded) -> None:
        record = self.episodes.get(event.episode_id)
        if record is None:
            return  # its start lies before the window read; the episode cannot be re-rendered
        if isinstance(event, ContextBuilt):
            record.contexts[event.step] = event
        elif isinstance(event, ActionTaken):
            record.actions[event.step] = event
        elif isinstance(event, ActionRejected):
            record.invalid[event.step] = event
        else:
            record.ended = event

    def children(self, episode_id: str) -> list[EpisodeRecord]:
        """Sub-agent episodes of ``episode_id`` in the order they started (event ids are time-ordered)."""
        kids = [r for r in self.episodes.values() if r.started.parent_episode_id == episode_id]
        return sorted(kids, key=lambda r: r.started.event_id)

    @classmethod
    def of(cls, events: Iterable[Event]) -> EpisodeLog:
        log = cls()
        for event in sorted(events, key=lambda e: e.event_id):
            log.add(event)
        return log


def read_log(bus: Bus, topics: Sequence[str] = LEARNER_TOPICS) -> EpisodeLog:
    """Replay ``topics`` from the start; events are applied in creation order, whatever their partition."""
    events: list[Event] = []
    offsets: dict[str, int] = {}
    existing = set(bus.topics())
    for topic in topics:
        if topic not in existing:
            continue
        for partition, end in bus.end_offsets(topic).items():
            offsets[f"{topic}/{partition}"] = end
        records = bus.replay(topic)
        events.extend(decodable(r for r in records if r.offset < offsets.get(f"{topic}/{r.partition}", 0)))
    log = EpisodeLog.of(events)
    log.offsets = offsets
    return log
