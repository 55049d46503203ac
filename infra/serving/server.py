"""Serve a registry version over an OpenAI-compatible engine, and follow its alias: every version it serves is
downloaded, made servable (``infra.serving.checkpoint``), loaded, then announced with ``ModelServed`` on the bus."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bus_schemas.envelope import Producer
from bus_schemas.events.training import ModelServed
from infra.registry.port import Registry, RegistryError, VersionRef
from infra.serving.checkpoint import ServableVersion, TemplateMismatch, prepare_version
from infra.serving.engines import Engine, EngineCommand, transformers_command, vllm_command
from infra.serving.process import EngineFailed, EngineProcess, wait_port_free

log = logging.getLogger("flywheel.serve")
PRODUCER = Producer(service="model-server", version="0.1.0")
_TARGET = re.compile(r"^(?:models:/)?(?P<name>[^@/\s]+)(?:@(?P<alias>[^@/\s]+)|/(?P<version>\d+))$")


@dataclass(frozen=True)
class ServeTarget:
    """What to serve: ``name@alias`` (followed when it moves) or a fixed ``name/version`` (``name@3`` too)."""

    name: str
    alias: str | None = None
    version: str | None = None

    @classmethod
    def parse(cls, text: str) -> ServeTarget:
        found = _TARGET.match(text.strip())
        if found is None:
            raise ValueError(f"{text!r} names no model version: use NAME@ALIAS (planner@production) or NAME/VERSION")
        alias, version = found["alias"], found["version"]
        if alias is not None and alias.isdigit():
            alias, version = None, alias
        return cls(found["name"], alias, version)

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.alias}" if self.alias else f"{self.name}/{self.version}"


@dataclass(frozen=True)
class ServeOptions:
    engine: Engine
    host: str
    port: int
    cache_root: Path
    device: str = "cpu"
    threads: int | None = None
    """transformers: torch CPU threads of the server (None: torch's default, every core)."""
    native_tools: bool = True
    start_timeout_s: float = 300.0
    run_id: str = "serve"

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


class ModelServer:
    """Keeps the engine serving ``target``'s current version; ``publish`` gets each ``ModelServed``."""

    def __init__(
        self, registry: Registry, target: ServeTarget, options: ServeOptions, publish: Callable[[ModelServed], object]
    ) -> None:
        self.registry, self.target, self.options, self._publish = registry, target, options, publish
        self.served: ServableVersion | None = None
        self.process: EngineProcess | None = None

    def sync(self) -> ModelServed | None:
        """Serve the target's current version if it is not served yet; the event announcing it, or None."""
        ref = self.registry.resolve(self.target.ref)
        if self.served is not None and ref.version == self.served.ref.version:
            return None
        version = prepare_version(self.registry, ref, self.options.cache_root)
        self._serve(version)
        previous, self.served = self.served, version
        event = self._announce(ref, version, previous)
        log.info("serving %s (%s) at %s", version.label, self.options.engine, self.options.endpoint)
        return event

    def follow(self, stop: threading.Event, poll_s: float = 5.0) -> None:
        """``sync`` now (unless a version is served already), then every ``poll_s`` until ``stop`` is set. After the
        start, a registry outage or a new version that cannot be served (download, template check, load) is logged and
        retried while the current one stays served (transformers; a vLLM restart stops the old server first, so there
        a failed start ends the command); an engine that died is an error."""
        if self.served is None:
            self.sync()  # at start, a version that cannot be served is an error
        while not stop.wait(poll_s):
            if self.process is None or not self.process.running():
                raise EngineFailed(f"the {self.options.engine} server at {self.options.endpoint} exited")
            try:
                self.sync()
            except (RegistryError, OSError, LookupError, TemplateMismatch, EngineFailed) as exc:
                log.warning("could not serve %s: %s (retrying in %.0f s)", self.target.ref, exc, poll_s)

    def close(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None

    def _serve(self, version: ServableVersion) -> None:
        options = self.options
        if self.process is not None and self.process.command.reloads_in_place:
            self.process.load(version.label, options.start_timeout_s)  # the same server, one more model
            return
        self.close()  # vLLM serves one checkpoint per process: restart it on the same port
        wait_port_free(options.host, options.port)
        self.process = EngineProcess(
            self._command(version), options.endpoint, options.cache_root / "logs" / f"{options.engine}.log"
        )
        self.process.start(options.start_timeout_s)
        if self.process.command.reloads_in_place:
            self.process.load(version.label, options.start_timeout_s)

    def _command(self, version: ServableVersion) -> EngineCommand:
        options = self.options
        if options.engine == "transformers":
            return transformers_command(
                options.cache_root, options.host, options.port, device=options.device, threads=options.threads
            )
        return vllm_command(
            version.folder, version.label, options.host, options.port, native_tools=options.native_tools
        )

    def _announce(self, ref: VersionRef, version: ServableVersion, previous: ServableVersion | None) -> ModelServed:
        event = ModelServed(
            producer=PRODUCER,
            run_id=self.options.run_id,
            model_name=ref.name,
            model_version=ref.version,
            alias=self.target.alias,
            engine=self.options.engine,
            endpoint=self.options.endpoint,
            served_model_name=version.label,
            checkpoint_sha256=version.checkpoint_sha256,
            registry_uri=ref.uri,
            previous_version=previous.ref.version if previous is not None else None,
        )
        self._publish(event)
        return event
