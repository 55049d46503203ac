"""Wiring: EpisodeVerified of a dev-evaluation group -> when the whole group is verified, DevSetEvaluated.

Reads the group's RolloutRequested (``rollouts``), verdicts (``verdicts``), EpisodeEnded (``episodes``) and
tasks from the log. Fires once per group: it checks the ``models`` topic for its earlier output and
remembers what this process emitted. As a side effect it records the dev scores on the registry version
and points ``@production`` at a model version that beats its baseline (see ``handler.is_better``).

A published harness revision (``harness`` topic: its HarnessVersionPublished and HarnessRevisionProposed name
the parent version) is compared per task with the parent's dev episodes of the same policy version
(``handler.compare_paired``); the HarnessRevisionDecided of that A/B goes out with the DevSetEvaluated, and
``@production`` moves to the revision only when it was accepted (it does not regress).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import cached_property

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import (
    DevSetEvaluated,
    EpisodeEnded,
    EpisodeVerified,
    HarnessRevisionDecided,
    HarnessRevisionProposed,
    HarnessVersionPublished,
    RolloutRequested,
)
from bus_schemas.topics import TOPIC_EPISODES, TOPIC_HARNESS, TOPIC_MODELS, TOPIC_ROLLOUTS, TOPIC_VERDICTS
from consumers.common.log_index import LogIndex
from consumers.common.sources import Sources
from consumers.dev_evaluator.handler import (
    VERSION,
    compare_paired,
    is_better,
    kind_of,
    outcomes,
    revision_decided,
    summarise,
)
from infra.bootstrap import Ports
from infra.registry.port import RegistryError
from infra.runtime import ConsumerSpec
from learner.tracking import log_dev_evaluation, log_revision_decision

NAME = "dev_evaluator"
PRODUCER = Producer(service=NAME, version=VERSION)
PRODUCTION = "production"
log = logging.getLogger("flywheel.dev_evaluator")


def _dev_request_key(event: Event) -> str | None:
    return event.episode_id if isinstance(event, RolloutRequested) and kind_of(event.group_id) else None


def _dev_group_key(event: Event) -> str | None:
    return event.group_id if isinstance(event, RolloutRequested) and kind_of(event.group_id) else None


def _dev_pair_key(event: Event) -> str | None:
    """Dev requests by (policy, harness): where the parent evaluation of a revision is found."""
    if isinstance(event, RolloutRequested) and kind_of(event.group_id):
        return f"{event.policy_version}|{event.harness_version}"
    return None


def _harness_key(event: Event) -> str | None:
    if isinstance(event, HarnessVersionPublished) and event.revision_id is not None:
        return f"published:{event.harness_version}"
    if isinstance(event, HarnessRevisionProposed):
        return f"proposed:{event.revision_id}"
    return None


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
    def pairs(self) -> LogIndex:
        assert self.ports is not None
        return LogIndex(self.ports.bus, TOPIC_ROLLOUTS, _dev_pair_key)

    @cached_property
    def revisions(self) -> LogIndex:
        assert self.ports is not None
        return LogIndex(self.ports.bus, TOPIC_HARNESS, _harness_key)

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
        decided = self._paired_decision(evaluated, members, verdicts) if evaluated.evaluates == "harness" else None
        better = decided.decision == "accepted" if decided is not None else is_better(evaluated, earlier)
        self._record(evaluated, better, decided)
        return [evaluated] if decided is None else [evaluated, decided]

    def _paired_decision(
        self, evaluated: DevSetEvaluated, members: list[RolloutRequested], verdicts: Mapping[str, Event]
    ) -> HarnessRevisionDecided | None:
        """The A/B decision on a published revision against its parent (None: the version is no revision)."""
        self.revisions.catch_up()
        published = self.revisions.get(f"published:{evaluated.harness_version}")
        if not published:
            return None
        revision = published[0]
        assert isinstance(revision, HarnessVersionPublished) and revision.revision_id is not None
        proposals = self.revisions.get(f"proposed:{revision.revision_id}")
        if not proposals:
            return None
        proposal = proposals[0]
        assert isinstance(proposal, HarnessRevisionProposed)
        parent_version, policy = proposal.base_version, members[0].policy_version
        self.pairs.catch_up()
        parent_requests = [r for r in self.pairs.get(f"{policy}|{parent_version}") if isinstance(r, RolloutRequested)]
        parent_verdicts = {r.episode_id: v for r in parent_requests for v in self.verdicts.get(r.episode_id)[:1]}
        solved = {k: v for k, v in verdicts.items() if isinstance(v, EpisodeVerified)}
        specs = {r.task_id: self.sources.task(r.task_id) for r in [*members, *parent_requests]}
        sandbox = {task_id for task_id, t in specs.items() if t.source.kind != "external"}  # Overall's tasks only
        paired = compare_paired(
            {k: v for k, v in outcomes(parent_requests, parent_verdicts).items() if k in sandbox},  # type: ignore[arg-type]
            {k: v for k, v in outcomes(members, solved).items() if k in sandbox},
            {task_id: specs[task_id].category for task_id in sandbox},
            seed=f"{policy}|{parent_version}|{evaluated.harness_version}",
        )
        return revision_decided(
            evaluated, proposal.harness_name, proposal.revision_id, parent_version, paired, PRODUCER
        )

    def _record(self, evaluated: DevSetEvaluated, better: bool, decided: HarnessRevisionDecided | None = None) -> None:
        """Dev scores as version tags and a dev-evaluation run, a revision's A/B result on its version's run;
        ``@production`` for the better version. Registry trouble is logged, not fatal."""
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
            log_dev_evaluation(registry, evaluated)  # a run nested under the flywheel run's, for trackers
            if decided is not None:
                log_revision_decision(registry, decided, f"{name}/{version}", evaluated.round)
            if better:
                registry.set_alias(name, PRODUCTION, version)
                log.info("%s/%s is now @%s (dev Overall %.3f)", name, version, PRODUCTION, evaluated.overall)
        except RegistryError as exc:
            log.warning("could not record dev scores of %s/%s in the registry: %s", name, version, exc)


def build() -> ConsumerSpec:
    return ConsumerSpec(NAME, (TOPIC_VERDICTS,), DevEvaluator().handle, frozenset({"EpisodeVerified"}), VERSION)
