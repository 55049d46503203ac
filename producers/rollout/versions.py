"""Resolves a request's policy and harness versions to live objects, cached per version, reloaded on new versions.

Policy refs: ``scripted:reference`` (the sandbox reference solver, per task, always in process), a local checkpoint
directory (``local:/path`` or a path), or a registry ref (``models:/planner@production``, ``planner/3``). A checkpoint
becomes a policy through the inference port (``harness_service.policy.inference``): with ``local:`` (the default) or
``vllm:`` a registry version's artifacts are downloaded once and loaded in process (``TransformersPolicy``, or the
learner's ``PlannerPolicy`` when the checkpoint carries the prompt window it was trained on); with
``openai+http(s)://`` nothing is downloaded and the server is asked for the version by name (``planner/3``); there an
alias (``planner@production``) means the version the server at that endpoint last announced for it (``ModelServed``,
published by ``flywheel serve model`` once the version is loaded), so a worker never asks for a version the server has
not loaded yet; with no announcement for the endpoint, the registry's alias.
Harness refs: ``default`` (``HarnessConfig()``) or a registry ref (``harness@production``, ``harness/2``).
Alias refs are re-resolved after the ``models`` or ``harness`` topic grows (ModelVersionRegistered,
HarnessVersionPublished), so new episodes pick up a new ``@production`` without a restart.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bus_schemas.events.tasks import TaskSpecified
from bus_schemas.events.training import ModelServed
from bus_schemas.topics import TOPIC_HARNESS, TOPIC_MODELS
from harness_service.config import HarnessConfig
from harness_service.policy.base import Policy
from harness_service.policy.inference import LOCAL, Inference
from harness_service.policy.scripted import ScriptedPolicy
from infra.bus.port import Bus
from infra.events import from_record, header
from infra.registry.port import Registry, VersionRef

PolicyFactory = Callable[[TaskSpecified], Policy]
"""A fresh policy for one episode of ``task`` (scripted policies hold per-episode state)."""

DEFAULT_HARNESS = "default"
CHECKPOINT_ARTIFACT = "checkpoint"
"""Where a model version's files live in its run when its source URI does not say (``runs:/<id>/<path>``)."""


class UnknownVersion(ValueError):
    """A policy or harness ref no resolver understands; the request is dead-lettered, nothing else runs."""


def _reference(task: TaskSpecified) -> Policy:
    from producers.tasks.solver import harness_reference

    return ScriptedPolicy(harness_reference(task), "reference")


SCRIPTED: dict[str, PolicyFactory] = {"scripted:reference": _reference}


def artifact_path(version: VersionRef) -> str:
    """The checkpoint folder inside the version's run, from ``runs:/<run_id>/<path>`` sources."""
    prefix = f"runs:/{version.run_id}/"
    return version.source[len(prefix) :] if version.source.startswith(prefix) else CHECKPOINT_ARTIFACT


class VersionResolver:
    """Per-version caches of loaded policies and harness configs; ``refresh`` drops alias resolutions."""

    def __init__(
        self,
        registry: Registry | None,
        bus: Bus,
        cache_dir: Path,
        inference: Inference = LOCAL,
        check_every_s: float = 2.0,
    ) -> None:
        inference.check_available()  # a vllm: worker without vLLM or a GPU fails at start, not per request
        self.registry = registry
        self.inference = inference
        self.check_every_s = check_every_s
        self._checked_at = float("-inf")
        self.bus = bus
        self.cache_dir = cache_dir
        self._aliases: dict[str, VersionRef] = {}
        self._policies: dict[str, Policy] = {}
        self._harnesses: dict[str, tuple[HarnessConfig, str | None]] = {}
        self._seen: dict[str, dict[int, int]] = {}
        self.reloads = 0

    def refresh(self) -> bool:
        """Forget alias resolutions if a model or harness version was published since the last check
        (checked at most every ``check_every_s``: reading end offsets costs a broker round trip)."""
        if time.monotonic() - self._checked_at < self.check_every_s:
            return False
        self._checked_at = time.monotonic()
        current = {topic: self.bus.end_offsets(topic) for topic in (TOPIC_MODELS, TOPIC_HARNESS)}
        changed = bool(self._seen) and current != self._seen
        self._seen = current
        if changed:
            self._aliases.clear()
            self._harnesses = {k: v for k, v in self._harnesses.items() if "@" not in k}
            self.reloads += 1
        return changed

    def policy(self, ref: str) -> PolicyFactory:
        if ref in SCRIPTED:
            return SCRIPTED[ref]
        if ref.startswith("local:") or Path(ref).is_dir():
            folder = Path(ref.removeprefix("local:"))
            label = f"local:{folder.name}"
            if self.inference.serves_remotely:  # the server was started on this directory: named by its path
                return self._cached(str(folder.resolve()), lambda: self.inference.served_policy(str(folder), label))
            return self._cached(str(folder.resolve()), lambda: self.inference.checkpoint_policy(folder, label))
        version = self._resolve(ref.removeprefix("models:/"))
        label = f"{version.name}/{version.version}"
        if self.inference.serves_remotely:
            return self._cached(label, lambda: self.inference.served_policy(label, label))
        return self._cached(label, lambda: self._download(version, label))

    def harness(self, ref: str) -> tuple[HarnessConfig, str | None]:
        """The config and its version label (``None`` for the built-in default: labelled by digest)."""
        if ref == DEFAULT_HARNESS:
            return HarnessConfig(), None
        if ref not in self._harnesses:
            from harness_service.versions import load_harness_version

            registry = self._registry(ref)
            try:
                self._harnesses[ref] = load_harness_version(registry, ref)
            except LookupError as exc:
                raise UnknownVersion(f"harness version {ref!r} is not in the registry: {exc}") from exc
        return self._harnesses[ref]

    def _cached(self, key: str, load: Callable[[], Policy]) -> PolicyFactory:
        if key not in self._policies:
            self._policies[key] = load()
        policy = self._policies[key]
        return lambda _task: policy

    def _resolve(self, ref: str) -> VersionRef:
        if "@" not in ref and "/" not in ref:
            raise UnknownVersion(
                f"unknown policy version {ref!r}: use scripted:reference, local:/path, or models:/name@alias|name/N"
            )
        if ref not in self._aliases and "@" in ref and self.inference.serves_remotely:
            served = self._served(ref)
            if served is not None:
                self._aliases[ref] = served
        if ref not in self._aliases:
            try:
                self._aliases[ref] = self._registry(ref).resolve(ref)
            except LookupError as exc:
                raise UnknownVersion(f"policy version {ref!r} is not in the registry: {exc}") from exc
        return self._aliases[ref]

    def _served(self, ref: str) -> VersionRef | None:
        """The version last announced (``ModelServed``) for alias ``ref`` at this worker's endpoint, if any."""
        name, _, alias = ref.partition("@")
        endpoint = (self.inference.base_url or "").rstrip("/")
        found: ModelServed | None = None
        for record in self.bus.replay(TOPIC_MODELS):
            if header(record, "event_type") != "ModelServed":
                continue
            event = from_record(record)
            assert isinstance(event, ModelServed)
            if (event.model_name, event.alias, event.endpoint.rstrip("/")) == (name, alias, endpoint):
                found = event
        if found is None:
            return None
        return VersionRef(found.model_name, found.model_version, None, found.registry_uri, aliases=(alias,))

    def _registry(self, ref: str) -> Registry:
        if self.registry is None:
            raise UnknownVersion(f"{ref!r} needs a registry, and this worker has none")
        return self.registry

    def _download(self, version: VersionRef, label: str) -> Policy:
        assert version.run_id is not None, f"{label} has no run to download from"
        dst = self.cache_dir / version.name / version.version
        if not dst.exists():  # download beside it, then rename: a crash never leaves a half checkpoint
            dst.parent.mkdir(parents=True, exist_ok=True)
            partial = Path(tempfile.mkdtemp(prefix=f".{version.version}-", dir=dst.parent))
            self._registry(label).download_artifacts(version.run_id, artifact_path(version), partial)
            try:
                partial.rename(dst)
            except OSError:
                if not dst.exists():
                    raise
                shutil.rmtree(partial)  # a worker sharing the cache (--workers N) renamed its copy first: use that
        folders = [p.parent for p in dst.rglob("config.json")]
        if not folders:
            raise UnknownVersion(f"{label}: no checkpoint (config.json) in its artifacts")
        return self.inference.checkpoint_policy(folders[0], label)
