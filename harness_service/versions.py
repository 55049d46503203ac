"""Harness configs as versioned artifacts in the registry: publish a version, move aliases, load name@alias.

A published version is an MLflow run (experiment ``harness``) holding ``harness/config.json``, registered
under the config's name with tags (digest, blob, parent); the same bytes go to the blob store so the
HarnessVersionPublished event can point at them (blob first, then the event).
"""

from __future__ import annotations

from typing import Protocol

import orjson

from bus_schemas.envelope import Producer
from bus_schemas.events.harness import HarnessVersionPublished
from harness_service.config import HarnessConfig
from harness_service.ports import BlobSink

CONFIG_FILE = "harness/config.json"
EXPERIMENT = "harness"


class HarnessRegistry(Protocol):
    """The part of the registry port this module uses."""

    def start_run(self, experiment: str, *, run_name: str | None = None, params=None, tags=None) -> str: ...
    def log_dict(self, run_id: str, data: dict, artifact_file: str) -> None: ...
    def load_dict(self, run_id: str, artifact_file: str) -> dict: ...
    def end_run(self, run_id: str, status: str = "FINISHED") -> None: ...
    def register_version(self, name: str, run_id: str, artifact_path: str, *, tags=None): ...
    def set_alias(self, name: str, alias: str, version: str) -> None: ...
    def resolve(self, ref: str): ...
    def versions(self, name: str) -> list: ...


def config_bytes(config: HarnessConfig) -> bytes:
    return orjson.dumps(orjson.loads(config.model_dump_json()), option=orjson.OPT_SORT_KEYS)


def publish_harness_version(
    registry: HarnessRegistry,
    blobs: BlobSink,
    config: HarnessConfig,
    *,
    producer: Producer,
    run_id: str,
    aliases: tuple[str, ...] = ("candidate",),
    parent_version: str | None = None,
    revision_id: str | None = None,
    round: int | None = None,
) -> HarnessVersionPublished:
    """Register ``config`` as a new version of harness ``config.name``, set ``aliases``, return the event.

    The event's ``harness_version`` is the label ``name/N`` that rollouts record as the harness version.
    Idempotent per ``revision_id``: a revision already registered under ``config.name`` is not registered again.
    """
    blob = blobs.put(config_bytes(config), "application/json")
    version = find_version(registry, config.name, "revision_id", revision_id) if revision_id else None
    if version is None:
        tags = {"digest": config.digest(), "blob_sha256": blob.sha256, "flywheel_run_id": run_id}
        if parent_version:
            tags["parent_version"] = parent_version
        if revision_id:
            tags["revision_id"] = revision_id
        mlflow_run = registry.start_run(EXPERIMENT, run_name=f"{config.name}-{config.digest()[7:19]}", tags=tags)
        registry.log_dict(mlflow_run, orjson.loads(config_bytes(config)), CONFIG_FILE)
        registry.end_run(mlflow_run)
        version = registry.register_version(config.name, mlflow_run, "harness", tags=tags)
    for alias in aliases:
        registry.set_alias(config.name, alias, version.version)
    return HarnessVersionPublished(
        producer=producer,
        run_id=run_id,
        round=round,
        harness_name=config.name,
        harness_version=f"{version.name}/{version.version}",
        config=blob,
        revision_id=revision_id,
    )


def find_version(registry: HarnessRegistry, name: str, tag: str, value: str):
    """The first version of ``name`` whose tag ``tag`` equals ``value``, or None."""
    return next((v for v in registry.versions(name) if v.tags.get(tag) == value), None)


def load_harness_version(registry: HarnessRegistry, ref: str) -> tuple[HarnessConfig, str]:
    """The config behind ``name@alias`` or ``name/version``, and its resolved version label ``name/N``."""
    version = registry.resolve(ref)
    data = registry.load_dict(version.run_id, CONFIG_FILE)
    return HarnessConfig.model_validate(data), f"{version.name}/{version.version}"
