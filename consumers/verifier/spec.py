"""Wiring: EpisodeEnded on ``episodes`` -> its start, its task and its evidence -> EpisodeVerified.

The verifier reads EpisodeStarted records of its own topic too, to remember what a start pins (backend, parent)
until the episode ends: no log lookup per episode. A start it did not see (consumed before a restart, or by
another replica before a rebalance) is read from the log instead, with the same result.
"""

from __future__ import annotations

from collections import OrderedDict

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import EpisodeEnded, EpisodeStarted
from bus_schemas.topics import TOPIC_EPISODES
from consumers.common.sources import Sources
from consumers.verifier.handler import VERSION, judge
from infra.bootstrap import Ports
from infra.runtime import ConsumerSpec

NAME = "verifier"
PRODUCER = Producer(service=NAME, version=VERSION)
MAX_OPEN_EPISODES = 100_000  # starts remembered at once; the oldest is dropped (then read from the log if it ends)


class Verifier:
    """Holds the log indexes of one process; every decision is :func:`judge`."""

    def __init__(self) -> None:
        self._sources: Sources | None = None
        self._starts: OrderedDict[str, EpisodeStarted] = OrderedDict()

    def handle(self, event: Event, ports: Ports) -> list[Event]:
        if isinstance(event, EpisodeStarted):
            self._starts.setdefault(event.episode_id, event)  # the first start, as the log lookup finds it
            if len(self._starts) > MAX_OPEN_EPISODES:
                self._starts.popitem(last=False)
            return []
        assert isinstance(event, EpisodeEnded)
        sources = self._sources = self._sources or Sources(ports)
        # All it needs of the episode is its start (backend, parent): remembered, else read from the log
        # (decoding no step of the episode).
        started = self._starts.pop(event.episode_id, None) or sources.started(event)
        if started is not None and started.parent_episode_id is not None:
            sources.episodes.forget(event.episode_id)
            return []  # a sub-agent's episode is judged as part of its parent's: the task's evidence is the parent's
        task = sources.task(event.task_id)
        backend = started.backend if started else task.backend
        verdict = judge(event, task, backend, sources.evidence(event), PRODUCER)
        sources.episodes.forget(event.episode_id)
        return [verdict]


def build() -> ConsumerSpec:
    return ConsumerSpec(
        NAME, (TOPIC_EPISODES,), Verifier().handle, frozenset({"EpisodeEnded", "EpisodeStarted"}), VERSION
    )
