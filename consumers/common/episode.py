"""One episode rebuilt from every step event on the ``episodes`` topic: what the model did, what it got back,
which outputs were unusable, and the sub-agent episodes it spawned."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bus_schemas.actions import Finish, ToolCall
from bus_schemas.envelope import Event
from bus_schemas.events import (
    ActionRejected,
    ActionTaken,
    ContextBuilt,
    EpisodeEnded,
    EpisodeStarted,
    ObservationReturned,
)

EventsOf = Callable[[str], list[Event]]
"""The events of another episode by id (a sub-agent's), in log order; [] when the log has none."""


@dataclass(frozen=True)
class Step:
    """An action and the observation it got (None when the episode ended before one came back)."""

    action: ActionTaken
    observation: ObservationReturned | None

    @property
    def number(self) -> int:
        return self.action.step

    @property
    def call(self) -> ToolCall | None:
        return self.action.action if isinstance(self.action.action, ToolCall) else None


@dataclass(frozen=True)
class Rejection:
    """A model output that was no usable action (unparsable, unknown tool, schema-invalid arguments)."""

    rejected: ActionRejected
    observation: ObservationReturned | None  # the error fed back to the model

    @property
    def number(self) -> int:
        return self.rejected.step

    @property
    def code(self) -> str:
        return self.rejected.error.code


Turn = Step | Rejection
"""One model output of an episode: a usable action (Step) or an unusable one (Rejection)."""


@dataclass(frozen=True)
class SubEpisode:
    """A sub-agent episode spawned at ``spawn_step`` of its parent; ``record`` is None
    when its end is not on the log."""

    spawn_step: int
    episode_id: str
    record: EpisodeRecord | None


@dataclass(frozen=True)
class EpisodeRecord:
    """The events of one episode in log order, split by kind."""

    episode_id: str
    started: EpisodeStarted | None
    steps: tuple[Step, ...]
    ended: EpisodeEnded
    events: tuple[Event, ...]
    rejections: tuple[Rejection, ...] = ()
    subagents: tuple[SubEpisode, ...] = ()

    @property
    def finish(self) -> Finish | None:
        last = self.steps[-1].action.action if self.steps else None
        return last if isinstance(last, Finish) else None

    @property
    def observations(self) -> list[ObservationReturned]:
        """Observations of usable actions (the feedback to rejected outputs is in ``rejections``)."""
        return [s.observation for s in self.steps if s.observation is not None]

    @property
    def turns(self) -> tuple[Turn, ...]:
        """Every model output in step order, usable or not."""
        return tuple(sorted((*self.steps, *self.rejections), key=lambda t: t.number))

    @property
    def unanswered_context(self) -> int | None:
        """The step whose context was built but got no model output at all (the policy call failed), if any."""
        built = [e.step for e in self.events if isinstance(e, ContextBuilt)]
        answered = {t.number for t in self.turns}
        return next((s for s in reversed(built) if s not in answered), None)

    def walk(self) -> Iterator[tuple[int | None, EpisodeRecord]]:
        """This episode (spawn step None) and every sub-agent episode below it, with the root step that spawned it."""
        yield None, self
        for sub in self.subagents:
            if sub.record is not None:
                for spawned_at, record in sub.record.walk():
                    yield sub.spawn_step if spawned_at is None else spawned_at, record


def ended_in(events: list[Event], ended_id: str) -> bool:
    """True once the EpisodeEnded with this event id is among ``events`` (the episode is complete)."""
    return any(e.event_id == ended_id for e in events)


def child_episode_id(observation: ObservationReturned) -> str | None:
    """The sub-agent episode a SubagentResult observation reports on, if it is one."""
    result = observation.result
    if isinstance(result, dict) and result.get("kind") == "subagent_result":
        child = result.get("child_episode_id")
        return child if isinstance(child, str) else None
    return None


def rebuild_episode(
    events: list[Event], ended: EpisodeEnded, events_of: EventsOf | None = None, depth: int = 0
) -> EpisodeRecord:
    """Group events up to ``ended``; a redelivered duplicate of a step keeps its first copy.

    With ``events_of``, the sub-agent episodes named by SubagentResult observations are rebuilt too (recursively).
    """
    upto = events[: next(i for i, e in enumerate(events) if e.event_id == ended.event_id) + 1]
    started = next((e for e in upto if isinstance(e, EpisodeStarted)), None)
    actions: dict[int, ActionTaken] = {}
    rejected: dict[int, ActionRejected] = {}
    observations: dict[int, ObservationReturned] = {}
    for event in upto:
        if isinstance(event, ActionTaken):
            actions.setdefault(event.step, event)
        elif isinstance(event, ActionRejected):
            rejected.setdefault(event.step, event)
        elif isinstance(event, ObservationReturned):
            observations.setdefault(event.step, event)
    steps = tuple(Step(actions[i], observations.get(i)) for i in sorted(actions))
    rejections = tuple(Rejection(rejected[i], observations.get(i)) for i in sorted(rejected) if i not in actions)
    subagents = []
    for step in steps:
        child = child_episode_id(step.observation) if step.observation is not None else None
        if child is not None:
            subagents.append(
                SubEpisode(step.number, child, _sub_record(child, events_of, depth) if events_of else None)
            )
    return EpisodeRecord(ended.episode_id, started, steps, ended, tuple(upto), rejections, tuple(subagents))


MAX_SUBAGENT_DEPTH = 8  # far above any harness's max_subagent_depth; stops a malformed log's cycle


def _sub_record(episode_id: str, events_of: EventsOf, depth: int) -> EpisodeRecord | None:
    if depth >= MAX_SUBAGENT_DEPTH:
        return None
    events = events_of(episode_id)
    end = next((e for e in events if isinstance(e, EpisodeEnded)), None)
    return None if end is None else rebuild_episode(events, end, events_of, depth + 1)
