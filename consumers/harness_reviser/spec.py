"""Wiring: DevSetEvaluated (model, dev) -> the round's diagnoses and tasks from the log, the base harness from the
registry, the patches rejected on that base in earlier rounds of the run -> Skipped, Proposed, or Proposed +
Decided(auto) + Published; a human's HarnessRevisionDecided(accepted) -> Published. New versions are registered
without an alias: the dev evaluator promotes ``@production`` if better.
"""

from __future__ import annotations

from functools import cached_property, lru_cache
from pathlib import Path

from bus_schemas.envelope import Event, Producer, correlate
from bus_schemas.events import (
    DevSetEvaluated,
    FailureDiagnosed,
    HarnessRevisionDecided,
    HarnessRevisionProposed,
    HarnessVersionPublished,
    TaskSpecified,
)
from bus_schemas.topics import TOPIC_DIAGNOSES, TOPIC_HARNESS, TOPIC_MODELS
from consumers.common.log_index import LogIndex
from consumers.common.sources import MissingInput, Sources
from consumers.harness_reviser.config import ReviserConfig
from consumers.harness_reviser.handler import VERSION, Skip, Writer, auto_decided, choose, is_input, proposed, skipped
from consumers.harness_reviser.rules import Procedure, ToolDocs
from harness_service.config import HarnessConfig
from harness_service.revisions import PATCH_MEDIA_TYPE, Patch, apply, parse_patch, patch_bytes
from harness_service.versions import find_version, load_harness_version, publish_harness_version
from infra.bootstrap import Ports
from infra.runtime import ConsumerSpec
from learner.tracking import harness_revision_run
from producers.backends.base import ToolSpec

NAME = "harness_reviser"
PRODUCER = Producer(service=NAME, version=VERSION)
MODEL_CACHE = Path(".flywheel/reviser-models")


def sandbox_docs(name: str) -> ToolSpec | None:
    from producers.backends.sandbox.catalog import TOOLS

    tool = TOOLS.get(name)
    return tool.spec if tool is not None else None


@lru_cache(maxsize=4096)
def _sandbox_calls(task_json: str) -> tuple[str, ...]:
    from bus_schemas.actions import ToolCall
    from producers.backends import plugins
    from producers.tasks.runner import run_episode
    from producers.tasks.solver import reference_solver

    task = TaskSpecified.model_validate_json(task_json)
    try:
        episode = run_episode(plugins.make_backend("sandbox"), task, reference_solver)
    except KeyError:  # not a template task: no reference solution
        return ()
    return tuple(a.name for a in episode.actions if isinstance(a, ToolCall))


def sandbox_procedure(task: TaskSpecified) -> tuple[str, ...] | None:
    """The tool calls of ``task``'s reference solution in the sandbox (deterministic); None for other tasks."""
    if task.backend != "sandbox":
        return None
    return _sandbox_calls(task.model_dump_json()) or None


def load_base(registry, ref: str) -> tuple[HarnessConfig, str] | None:
    """The config a dev result was measured with and its label ``name/N``; None when ``ref`` names no registry version.

    ``default`` is the built-in config; ``name@sha256:...`` (a digest label) is looked up by the version's digest tag.
    """
    if ref == "default":
        return HarnessConfig(), "default"
    name, _, digest = ref.partition("@")
    if digest.startswith("sha256:"):
        version = find_version(registry, name, "digest", digest)
        return load_harness_version(registry, f"{name}/{version.version}") if version is not None else None
    if "@" in ref or "/" in ref:
        return load_harness_version(registry, ref)
    return None


class HarnessReviser:
    def __init__(
        self,
        config: ReviserConfig | None = None,
        writer: Writer | None = None,
        docs: ToolDocs = sandbox_docs,
        procedure: Procedure = sandbox_procedure,
    ) -> None:
        self.config = config or ReviserConfig()
        self.docs = docs
        self.procedure = procedure
        self._writer = writer
        self.ports: Ports | None = None

    @cached_property
    def diagnoses(self) -> LogIndex:
        assert self.ports is not None
        return LogIndex(
            self.ports.bus,
            TOPIC_DIAGNOSES,
            lambda e: f"{e.run_id}/{e.round}" if isinstance(e, FailureDiagnosed) else None,
        )

    @cached_property
    def proposals(self) -> LogIndex:
        assert self.ports is not None
        return LogIndex(
            self.ports.bus, TOPIC_HARNESS, lambda e: e.revision_id if isinstance(e, HarnessRevisionProposed) else None
        )

    @cached_property
    def rejections(self) -> LogIndex:
        """Rejected revisions by run id."""
        assert self.ports is not None
        return LogIndex(
            self.ports.bus,
            TOPIC_HARNESS,
            lambda e: e.run_id if isinstance(e, HarnessRevisionDecided) and e.decision == "rejected" else None,
        )

    @cached_property
    def sources(self) -> Sources:
        assert self.ports is not None
        return Sources(self.ports)

    def writer(self) -> Writer | None:
        if self._writer is None and self.config.policy:
            from consumers.harness_reviser.writer import load_writer

            assert self.ports is not None
            self._writer = load_writer(self.config.policy, self.ports.registry, self.ports.bus, MODEL_CACHE)
        return self._writer

    def handle(self, event: Event, ports: Ports) -> list[Event]:
        self.ports = ports
        if not is_input(event):
            return []
        if isinstance(event, DevSetEvaluated):
            return self._revise(event, ports)
        assert isinstance(event, HarnessRevisionDecided)
        return [self._publish_accepted(event, ports)]

    def _revise(self, dev: DevSetEvaluated, ports: Ports) -> list[Event]:
        base = load_base(ports.registry, dev.harness_version)
        if base is None:
            name = dev.harness_version.split("@")[0].split("/")[0]
            return [
                skipped(
                    dev,
                    name,
                    dev.harness_version,
                    f"base harness {dev.harness_version!r} is not a registry version",
                    PRODUCER,
                )
            ]
        config, base_version = base
        self.diagnoses.catch_up()
        found = sorted(
            self.diagnoses.get(f"{dev.run_id}/{dev.round}"), key=lambda e: e.event_id
        )  # uuid7: creation order
        diagnosed = [d for d in found if isinstance(d, FailureDiagnosed)]
        tasks = {d.task_id: self.sources.task(d.task_id) for d in diagnosed}
        # Only failures on train tasks: revising the harness from dev failures would tune it to the dev split.
        diagnoses = [d for d in diagnosed if tasks[d.task_id].split == "train"]
        rejected = self._rejected(dev, base_version, ports)
        result = choose(dev, diagnoses, tasks, config, self.config, self.docs, self.writer(), self.procedure, rejected)
        if isinstance(result, Skip):
            return [skipped(dev, config.name, base_version, result.reason, PRODUCER)]
        ref = ports.blobs.put(patch_bytes(result.patch), PATCH_MEDIA_TYPE)  # blob first, then the event
        proposal = proposed(dev, base_version, config, result, ref, PRODUCER)
        if result.patch.kind not in self.config.auto_approve:
            return [proposal]  # waits for `flywheel review`
        published = self._publish(ports, dev, result.revised, proposal)
        return [proposal, auto_decided(dev, proposal, result.patch.kind, PRODUCER), published]

    def _rejected(self, dev: DevSetEvaluated, base_version: str, ports: Ports) -> list[Patch]:
        """The patches proposed on ``base_version`` in an earlier round of this run and rejected since (by the paired
        A/B or a reviewer). Earlier rounds only: their decisions are on the log before this round's dev result, so
        a redelivered result finds the same ones."""
        if dev.round is None:
            return []
        self.rejections.catch_up()
        patches = []
        for decided in self.rejections.get(dev.run_id):
            assert isinstance(decided, HarnessRevisionDecided)
            found = self.proposals.lookup(decided.revision_id, bool)
            proposal = next((e for e in found if isinstance(e, HarnessRevisionProposed)), None)
            if proposal is None or proposal.base_version != base_version or proposal.round is None:
                continue
            if proposal.round < dev.round:
                patches.append(parse_patch(ports.blobs.get(proposal.patch)))
        return patches

    def _publish_accepted(self, decided: HarnessRevisionDecided, ports: Ports) -> HarnessVersionPublished:
        found = self.proposals.lookup(decided.revision_id, bool)
        if not found:
            raise MissingInput(f"no HarnessRevisionProposed {decided.revision_id!r} on topic {TOPIC_HARNESS!r}")
        proposal = found[0]
        assert isinstance(proposal, HarnessRevisionProposed)
        base = load_base(ports.registry, proposal.base_version)
        if base is None:
            raise MissingInput(
                f"base harness {proposal.base_version!r} of {proposal.revision_id} is not in the registry"
            )
        revised = apply(base[0], parse_patch(ports.blobs.get(proposal.patch)))
        return self._publish(ports, decided, revised, proposal)

    def _publish(
        self, ports: Ports, cause: Event, revised: HarnessConfig, proposal: HarnessRevisionProposed
    ) -> HarnessVersionPublished:
        """Registers ``revised`` (once per revision id) without an alias and returns the event, caused by ``cause``.
        Its MLflow run nests under the flywheel run's parent run (when there is one), described by the proposal."""
        placement = harness_revision_run(ports.registry, cause.run_id, cause.round)
        placement["run_tags"] |= {
            "mlflow.note.content": proposal.summary,
            "patch_kinds": ",".join(proposal.patch_kinds),
        }
        event = publish_harness_version(
            ports.registry,
            ports.blobs,
            revised,
            producer=PRODUCER,
            run_id=cause.run_id,
            aliases=(),
            parent_version=proposal.base_version,
            revision_id=proposal.revision_id,
            round=cause.round,
            **placement,
        )
        return event.model_copy(update=correlate(cause))


def build(config: ReviserConfig | None = None, writer: Writer | None = None) -> ConsumerSpec:
    return ConsumerSpec(
        NAME,
        (TOPIC_MODELS, TOPIC_HARNESS),
        HarnessReviser(config, writer).handle,
        frozenset({"DevSetEvaluated", "HarnessRevisionDecided"}),
        VERSION,
    )
