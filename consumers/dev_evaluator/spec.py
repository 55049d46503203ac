"""Wiring: EpisodeVerified of a dev-evaluation group -> when the whole group is verified, DevSetEvaluated.

Reads the group's RolloutRequested (``rollouts``), verdicts (``verdicts``), EpisodeEnded (``episodes``) and
tasks from the log. Fires once per group: it checks the ``models`` topic for its earlier output and
remembers what this process emitted. As a side effect it records the dev scores on the registry version
and points ``@production`` at a model or harness version that beats its baseline (see ``handler.is_better``).
"""

from __future__ import annotations

import logging
from functools import cached_property

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import DevSetEvaluated, EpisodeEnded, EpisodeVerified, RolloutRequested
from bus_schemas.topics import TOPIC_EPISODES, TOPIC_MODELS, TOPIC_ROLLOUTS, TOPIC_VERDICTS
from consumers.common.log_index import LogIndex
from consumers.common.sources import Sources
from consumers.dev_evaluator.handler import VERSION, is_better, kind_of, summarise
from infra.bootstrap import Ports
from infra.registry.port import RegistryError
from infra.runtime import ConsumerSpec

NAME = "dev_evaluator"
PRODUCER = Producer(service=NAME, version=VERSION)
PRODUCTION = "production"
log = logging.getLogger("flywheel.dev_evaluator")


def _dev_request_key(event: Event) -> str | None:
    return event.episode_id if isinstance(event, RolloutRequested) and kind_of(event.group_id) else None


def _dev_group_key(event: Event) -> str | None:
    return event.group_id if isinstance(event, RolloutRequested) and kind_of(event.group_id) else None


class DevEvaluator:
    def __init__(self) -> None:
        self.ports: Ports | None = None
        self._fired: set[str] = set()

    @cached_property
    def sources(self) -> Sources:
        assert self.ports is not None
        return Sources(self.ports)

    @cached_property
    def requests(self) -> LogIndex:
        assert self.ports is not None
        return LogIndex(self.ports.bus, TOPIC_ROLLOUTS, _dev_request_key)

    @cached_property
    def groups(self) -> LogIndex:
        assert self.ports is not None
        return LogIndex(self.ports.bus, TOPIC_ROLLOUTS, _dev_group_key)

    @cached_property
    def verdicts(self) -> LogIndex:
        assert self.ports is not None
        return LogIndex(
            self.ports.bus, TOPIC_VERDICTS, lambda e: e.episode_id if isinstance(e, EpisodeVerified) else None
        )

    @cached_property
    def ends(self) -> LogIndex:
        assert self.ports is not None
        return LogIndex(self.ports.bus, TOPIC_EPISODES, lambda e: e.episode_id if isinstance(e, EpisodeEnded) else None)

    @cached_property
    def evaluations(self) -> LogIndex:
        assert self.ports is not None
        return LogIndex(self.ports.bus, TOPIC_MODELS, lambda e: e.run_id if isinstance(e, DevSetEvaluated) else None)

    def handle(self, event: Event, ports: Ports) -> list[Event]:
        assert isinstance(event, EpisodeVerified)
        self.ports = ports
        found = self.requests.lookup(event.episode_id, bool)
        if not found:
            return []  # not a dev-evaluation episode
        request = found[0]
        assert isinstance(request, RolloutRequested) and request.group_id is not None
        group = request.group_id
        if group in self._fired:
            return []
        self.groups.catch_up()
        requested = [m for m in self.groups.get(group) if isinstance(m, RolloutRequested)]
        members = sorted(requested, key=lambda m: (m.task_id, m.episode_id))
        self.verdicts.catch_up()
        verdicts = {m.episode_id: v for m in members for v in self.verdicts.get(m.episode_id)[:1]}
        verdicts[event.episode_id] = verdicts.get(event.episode_id, event)
        if len(verdicts) < len(members):
            return []  # the group is still running
        self.ends.catch_up()
        ended = {m.episode_id: e for m in members for e in self.ends.get(m.episode_id)[:1]}
        tasks = {m.task_id: self.sources.task(m.task_id) for m in members}
        evaluated = summarise(members, verdicts, ended, tasks, members[0], PRODUCER)  # type: ignore[arg-type]
        self.evaluations.catch_up()
        earlier: list[DevSetEvaluated] = list(self.evaluations.get(request.run_id))  # type: ignore[arg-type]
        if any(e.causation_id == members[0].event_id for e in earlier):
            self._fired.add(group)
            return []  # published before (a redelivery after a crash)
        self._fired.add(group)
        self._record(evaluated, is_better(evaluated, earlier))
        return [evaluated]

    def _record(self, evaluated: DevSetEvaluated, better: bool) -> None:
        """Dev scores as version tags; ``@production`` for the better version. Registry trouble is logged, not fatal."""
        assert self.ports is not None
        registry = self.ports.registry
        if evaluated.evaluates == "model":
            name, version = evaluated.model_name, evaluated.model_version
        else:
            name, _, version = evaluated.harness_version.rpartition("/")
        if not name or not version.isdigit():
            return  # scripted policies and the built-in harness are not registry versions
        try:
            registry.set_version_tag(name, version, "dev_overall", f"{evaluated.overall:.6f}")
            if better:
                registry.set_alias(name, PRODUCTION, version)
                log.info("%s/%s is now @%s (dev Overall %.3f)", name, version, PRODUCTION, evaluated.overall)
        except RegistryError as exc:
            log.warning("could not record dev scores of %s/%s in the registry: %s", name, version, exc)


def build() -> ConsumerSpec:
    return ConsumerSpec(NAME, (TOPIC_VERDICTS,), DevEvaluator().handle, frozenset({"EpisodeVerified"}), VERSION)
