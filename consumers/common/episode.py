"""One episode rebuilt from its events on the ``episodes`` topic, plus the task it ran and its evidence."""

from __future__ import annotations

from dataclasses import dataclass

from bus_schemas.actions import Finish, ToolCall
from bus_schemas.envelope import Event
from bus_schemas.events import ActionTaken, EpisodeEnded, EpisodeStarted, ObservationReturned


@dataclass(frozen=True)
class Step:
    """An action and the observation it got (None when the episode ended before one came back)."""

    action: ActionTaken
    observation: ObservationReturned | None

    @property
    def call(self) -> ToolCall | None:
        return self.action.action if isinstance(self.action.action, ToolCall) else None


@dataclass(frozen=True)
class EpisodeRecord:
    """The events of one episode in log order, split by kind."""

    episode_id: str
    started: EpisodeStarted | None
    steps: tuple[Step, ...]
    ended: EpisodeEnded
    events: tuple[Event, ...]

    @property
    def finish(self) -> Finish | None:
        last = self.steps[-1].action.action if self.steps else None
        return last if isinstance(last, Finish) else None

    @property
    def observations(self) -> list[ObservationReturned]:
        return [s.observation for s in self.steps if s.observation is not None]


def ended_in(events: list[Event], ended_id: str) -> bool:
    """True once the EpisodeEnded with this event id is among ``events`` (the episode is complete)."""
    return any(e.event_id == ended_id for e in events)


def rebuild_episode(events: list[Event], ended: EpisodeEnded) -> EpisodeRecord:
    """Group events up to ``ended``; a redelivered duplicate of a step keeps its first copy."""
    upto = events[: next(i for i, e in enumerate(events) if e.event_id == ended.event_id) + 1]
    started = next((e for e in upto if isinstance(e, EpisodeStarted)), None)
    actions: dict[int, ActionTaken] = {}
    observations: dict[int, ObservationReturned] = {}
    for event in upto:
        if isinstance(event, ActionTaken):
            actions.setdefault(event.step, event)
        elif isinstance(event, ObservationReturned):
            observations.setdefault(event.step, event)
    steps = tuple(Step(actions[i], observations.get(i)) for i in sorted(actions))
    return EpisodeRecord(ended.episode_id, started, steps, ended, tuple(upto))
