"""RL's view of the bus: the groups it requested, read back as the rollout workers and the verifier publish them.

The learner publishes ``RolloutRequested`` (group_size G, a sampling temperature, a checkpoint of its current
weights as the policy) and reads what the real services produce: the members' episode events from
``episodes`` (their ActionTaken/ActionRejected carry the behaviour token ids and log-probs as a blob) and
their ``EpisodeVerified`` from ``verdicts``. Nothing here runs an episode or judges one.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bus_schemas.envelope import Event
from bus_schemas.errors import SchemaError
from bus_schemas.events.episodes import ActionRejected, ActionTaken, EpisodeEnded, EpisodeStarted, ObservationReturned
from bus_schemas.events.rollouts import RolloutRequested
from bus_schemas.events.verdicts import EpisodeVerified
from bus_schemas.topics import TOPIC_EPISODES, TOPIC_VERDICTS
from harness_service.policy.base import SampledTokens
from infra.bus.port import Bus
from infra.events import from_record
from producers.rollout.ids import episode_id_for

_log = logging.getLogger(__name__)
MAX_ATTEMPTS = 8
"""A member re-run after a worker crash gets ``.a<N>`` ids; more attempts than this count as missing."""

Pump = Callable[[], int]
"""Lets the services run while the learner waits (in one process: steps the rollout worker and verifier)."""


@dataclass
class Member:
    """One judged group member: its episode, its sub-agents' episodes, its verdict."""

    request: RolloutRequested
    episode_id: str
    started: EpisodeStarted
    ended: EpisodeEnded
    verdict: EpisodeVerified
    actions: list[ActionTaken | ActionRejected] = field(default_factory=list)
    """This episode's model turns and (recursively) its sub-agents', in log order."""


class _Topic:
    """Events of one topic appended after construction, decoded, grouped by episode id."""

    def __init__(self, bus: Bus, topic: str) -> None:
        self.bus, self.topic = bus, topic
        self.by_episode: dict[str, list[Event]] = {}
        self._cursor = dict(bus.end_offsets(topic)) if topic in bus.topics() else {}

    def catch_up(self) -> int:
        new = 0
        if self.topic not in self.bus.topics():
            return 0
        for part, end in sorted(self.bus.end_offsets(self.topic).items()):
            start = self._cursor.get(part, 0)
            if start >= end:
                continue
            for record in self.bus.replay(self.topic, from_offset=start, partition=part):
                self._cursor[part] = record.offset + 1
                try:
                    event = from_record(record)
                except SchemaError:
                    continue
                episode = getattr(event, "episode_id", None)
                if episode is not None:
                    self.by_episode.setdefault(episode, []).append(event)
                    new += 1
            self._cursor[part] = max(self._cursor.get(part, 0), end)
        return new

    def forget(self, episode_id: str) -> None:
        self.by_episode.pop(episode_id, None)


class RolloutReader:
    """Collects requested groups from the bus; create it before publishing the requests it will read."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.episodes = _Topic(bus, TOPIC_EPISODES)
        self.verdicts = _Topic(bus, TOPIC_VERDICTS)

    def member(self, request: RolloutRequested, k: int) -> Member | None | bool:
        """The judged member ``k`` (its last attempt); None while it runs or awaits judgement; False when lost."""
        for attempt in range(MAX_ATTEMPTS):
            episode_id = episode_id_for(request, k, attempt)
            events = self.episodes.by_episode.get(episode_id, [])
            ended = next((e for e in events if isinstance(e, EpisodeEnded)), None)
            if ended is None:
                return None
            if ended.reason == "abandoned":  # a worker died mid-episode; the member re-ran as attempt + 1
                continue
            verdict = next(
                (e for e in self.verdicts.by_episode.get(episode_id, []) if isinstance(e, EpisodeVerified)), None
            )
            started = next((e for e in events if isinstance(e, EpisodeStarted)), None)
            if verdict is None or started is None:
                return None
            return Member(request, episode_id, started, ended, verdict, self._actions(episode_id, 0))
        return False

    def _actions(self, episode_id: str, depth: int) -> list[ActionTaken | ActionRejected]:
        """Model turns of the episode and of the sub-agents it spawned (named in their SubagentResult)."""
        turns: list[ActionTaken | ActionRejected] = []
        for event in self.episodes.by_episode.get(episode_id, []):
            if isinstance(event, (ActionTaken, ActionRejected)):
                turns.append(event)
            elif isinstance(event, ObservationReturned) and isinstance(event.result, dict) and depth < 4:
                child = event.result.get("child_episode_id")
                if isinstance(child, str) and child in self.episodes.by_episode:
                    turns.extend(self._actions(child, depth + 1))
        return turns

    def wait(
        self, requests: Sequence[RolloutRequested], *, timeout_s: float, pump: Pump | None = None, poll_s: float = 0.2
    ) -> list[list[Member]]:
        """Every request's judged members once all are in (or at the timeout: the complete groups only)."""
        deadline = time.monotonic() + timeout_s
        while True:
            worked = pump() if pump is not None else 0
            self.episodes.catch_up()
            self.verdicts.catch_up()
            groups, pending = [], 0
            for request in requests:
                members = [self.member(request, k) for k in range(request.group_size)]
                if any(m is None for m in members):
                    pending += 1
                groups.append([m for m in members if isinstance(m, Member)])
            if not pending:
                return groups
            if time.monotonic() > deadline:
                complete = [g for g, r in zip(groups, requests, strict=True) if len(g) == r.group_size]
                _log.warning(
                    "rl: %d of %d groups still running after %.0fs; training on the %d complete ones",
                    pending,
                    len(requests),
                    timeout_s,
                    len(complete),
                )
                return complete
            if not worked:
                time.sleep(poll_s)

    def behaviour(self, action: ActionTaken | ActionRejected, read: Callable[[object], bytes]) -> SampledTokens | None:
        """The token ids and log-probs the policy sampled at this turn (None when the policy exposed none)."""
        if action.sampled is None:
            return None
        return SampledTokens.from_json(json.loads(read(action.sampled)))

    def forget(self, members: Sequence[Member]) -> None:
        for member in members:
            self.episodes.forget(member.episode_id)
            self.verdicts.forget(member.episode_id)
