"""Read access to the log for a consumer: tasks, episodes and evidence, each through a :class:`LogIndex`."""

from __future__ import annotations

from functools import cached_property

from bus_schemas.envelope import Event
from bus_schemas.events import EpisodeEnded, EpisodeStarted, ObservationReturned, TaskSpecified
from bus_schemas.topics import TOPIC_EPISODES, TOPIC_TASKS
from consumers.common.episode import MAX_SUBAGENT_DEPTH, EpisodeRecord, child_episode_id, ended_in, rebuild_episode
from consumers.common.log_index import LogIndex
from infra.bootstrap import Ports
from producers.backends.base import Evidence
from producers.backends.evidence import LeanEvidence, decode_evidence


class MissingInput(LookupError):
    """An event refers to something the log does not hold (yet): retried, then dead-lettered."""


def _episode_key(event: Event) -> str | None:
    return event.episode_id


class Sources:
    """Lazily built indexes over the topics a consumer reads besides its own input."""

    def __init__(self, ports: Ports) -> None:
        self.ports = ports

    @cached_property
    def tasks(self) -> LogIndex:
        return LogIndex(
            self.ports.bus,
            TOPIC_TASKS,
            lambda e: e.task_id if isinstance(e, TaskSpecified) else None,
            by_record_key=True,
        )

    @cached_property
    def episodes(self) -> LogIndex:
        return LogIndex(self.ports.bus, TOPIC_EPISODES, _episode_key, by_record_key=True)

    def task(self, task_id: str) -> TaskSpecified:
        """The first TaskSpecified of ``task_id`` (tasks are immutable: a later one with the same id is ignored)."""
        found = self.tasks.lookup(task_id, bool)
        if not found:
            raise MissingInput(f"no TaskSpecified for task {task_id!r} on topic {TOPIC_TASKS!r}")
        task = found[0]
        assert isinstance(task, TaskSpecified)
        return task

    def episode(self, ended: EpisodeEnded, subagents: bool = False) -> EpisodeRecord:
        """The episode ``ended`` closes; with ``subagents``, its sub-agent episodes rebuilt too."""
        events = self.episodes.lookup(ended.episode_id, lambda evs: ended_in(evs, ended.event_id))
        if not ended_in(events, ended.event_id):
            raise MissingInput(f"episode {ended.episode_id!r} has no EpisodeEnded {ended.event_id} on the log")
        return rebuild_episode(events, ended, self.subagent_events if subagents else None)

    def started(self, ended: EpisodeEnded) -> EpisodeStarted | None:
        """The EpisodeStarted of ``ended``'s episode (the first, as :meth:`episode` finds it), decoding no other
        step of the episode: for a consumer that needs only what the start pins (the verifier: the backend)."""
        started = self.episodes.first_of(ended.episode_id, "EpisodeStarted")
        return started if isinstance(started, EpisodeStarted) else None

    def episode_by_id(self, episode_id: str, subagents: bool = False) -> EpisodeRecord:
        """The episode ending with its last EpisodeEnded (for consumers that react to verdicts)."""
        events = self.episodes.lookup(episode_id, lambda evs: any(isinstance(e, EpisodeEnded) for e in evs))
        ends = [e for e in events if isinstance(e, EpisodeEnded)]
        if not ends:
            raise MissingInput(f"episode {episode_id!r} has not ended on topic {TOPIC_EPISODES!r}")
        return rebuild_episode(events, ends[0], self.subagent_events if subagents else None)

    def subagent_events(self, episode_id: str) -> list[Event]:
        """A sub-agent episode's events ([] when it never ended on the log: its parent is still judged)."""
        return self.episodes.lookup(episode_id, lambda evs: any(isinstance(e, EpisodeEnded) for e in evs))

    def release(self, episode_id: str) -> None:
        """Drop a decided episode and its sub-agent episodes from the index. A sub-agent episode's own verdict
        releases nothing: its parent, decided later, still reads it (a forgotten key costs a full re-read)."""
        events = self.episodes.get(episode_id)
        if any(isinstance(e, EpisodeStarted) and e.parent_episode_id for e in events):
            return
        self._forget_tree(episode_id, 0)

    def _forget_tree(self, episode_id: str, depth: int) -> None:
        for event in self.episodes.get(episode_id) if depth < MAX_SUBAGENT_DEPTH else []:
            child = child_episode_id(event) if isinstance(event, ObservationReturned) else None
            if child is not None:
                self._forget_tree(child, depth + 1)
        self.episodes.forget(episode_id)

    def evidence(self, ended: EpisodeEnded) -> Evidence | LeanEvidence | None:
        """The backend's evidence (the harness stores it as the final_state blob), either wire version; None when
        there is none. Lean (v2) evidence fetches its initial state only when a criterion reads it."""
        if ended.final_state is None:
            return None
        data = self.ports.blobs.get(ended.final_state)  # content-addressed, so the bytes are the harness's
        try:
            return decode_evidence(data, self.ports.blobs)
        except ValueError as exc:
            raise ValueError(f"blob {ended.final_state.sha256[:12]} is not backend evidence: {exc}"[:2000]) from exc
