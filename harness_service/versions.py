"""Harness configs as versioned artifacts in the registry: publish a version, move aliases, load name@alias.

A published version is an MLflow run (experiment ``harness``, or nested under its flywheel run's parent run in
that run's experiment) with every config field as a param, holding
``harness/config.json`` and (for a revision) ``harness/patch.diff`` against its parent, registered
under the config's name with tags (digest, blob, parent); the same bytes go to the blob store so the
HarnessVersionPublished event can point at them (blob first, then the event).
"""

from __future__ import annotations

import difflib
import logging
import tempfile
from pathlib import Path
from typing import Any, Protocol

import orjson

from bus_schemas.envelope import Producer
from bus_schemas.events.harness import HarnessVersionPublished
from harness_service.config import HarnessConfig
from harness_service.ports import BlobSink

CONFIG_FILE = "harness/config.json"
PATCH_FILE = "patch.diff"  # under harness/: the unified diff against the parent version's config
EXPERIMENT = "harness"
PARAM_CHARS = 6000  # MLflow's limit on a param value

log = logging.getLogger("flywheel.harness.versions")


class HarnessRegistry(Protocol):
    """The part of the registry port this module uses."""

    def start_run(
        self, experiment: str, *, run_name: str | None = None, params=None, tags=None, parent_run_id=None
    ) -> str: ...
    def get_run(self, run_id: str): ...
    def log_dict(self, run_id: str, data: dict, artifact_file: str) -> None: ...
    def log_artifacts(self, run_id: str, local_dir: Path, artifact_path: str | None = None) -> None: ...
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
    parent_run_id: str | None = None,
    run_tags: dict[str, str] | None = None,
) -> HarnessVersionPublished:
    """Register ``config`` as a new version of harness ``config.name``, set ``aliases``, return the event.

    The event's ``harness_version`` is the label ``name/N`` that rollouts record as the harness version.
    Idempotent per ``revision_id``: a revision already registered under ``config.name`` is not registered again.
    With ``parent_run_id`` (a flywheel run's parent run) the version's run is nested under it, in its experiment;
    ``run_tags`` go on the run only (the version keeps its lineage tags).
    """
    blob = blobs.put(config_bytes(config), "application/json")
    version = find_version(registry, config.name, "revision_id", revision_id) if revision_id else None
    if version is None:
        tags = {"digest": config.digest(), "blob_sha256": blob.sha256, "flywheel_run_id": run_id}
        if parent_version:
            tags["parent_version"] = parent_version
        if revision_id:
            tags["revision_id"] = revision_id
        experiment = registry.get_run(parent_run_id).experiment if parent_run_id else EXPERIMENT
        prefix = f"round-{round}-harness-" if parent_run_id and round is not None else ""
        mlflow_run = registry.start_run(
            experiment,
            run_name=f"{prefix}{config.name}-{config.digest()[7:19]}",
            params=config_params(config),
            tags={**(run_tags or {}), **tags},
            parent_run_id=parent_run_id,
        )
        registry.log_dict(mlflow_run, orjson.loads(config_bytes(config)), CONFIG_FILE)
        if parent_version:
            _log_patch(registry, mlflow_run, config, parent_version)
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


def config_params(config: HarnessConfig) -> dict[str, str]:
    """Every field of ``config`` as an MLflow param (nested fields dotted; lists and long texts as JSON, clipped)."""

    def flat(values: dict[str, Any], prefix: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, value in values.items():
            if isinstance(value, dict) and value:
                out.update(flat(value, f"{prefix}{key}."))
            else:
                text = value if isinstance(value, str) else orjson.dumps(value).decode()
                out[f"{prefix}{key}"] = text if len(text) <= PARAM_CHARS else text[: PARAM_CHARS - 1] + "…"
        return out

    return flat(orjson.loads(config_bytes(config)), "")


def config_patch(parent: HarnessConfig, config: HarnessConfig, parent_label: str, label: str) -> str:
    """A unified diff of the two configs' sorted, indented JSON: what the revision changed."""

    def lines(c: HarnessConfig) -> list[str]:
        return (
            orjson.dumps(orjson.loads(config_bytes(c)), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
            .decode()
            .splitlines(keepends=True)
        )

    return "".join(difflib.unified_diff(lines(parent), lines(config), fromfile=parent_label, tofile=label))


def _log_patch(registry: HarnessRegistry, mlflow_run: str, config: HarnessConfig, parent_version: str) -> None:
    """``harness/patch.diff`` against the parent version (a parent the registry cannot give back is logged)."""
    ref = parent_version if "/" in parent_version or "@" in parent_version else f"{config.name}/{parent_version}"
    try:
        parent, label = load_harness_version(registry, ref)
    except Exception as exc:  # noqa: BLE001 - the diff is for readers; the version itself is registered regardless
        log.warning("no patch artifact for %s: parent %s not loadable: %s", config.name, ref, exc)
        return
    with tempfile.TemporaryDirectory(prefix="harness-patch-") as tmp:
        (Path(tmp) / PATCH_FILE).write_text(config_patch(parent, config, label, f"{config.name} (new)"))
        registry.log_artifacts(mlflow_run, Path(tmp), "harness")


def find_version(registry: HarnessRegistry, name: str, tag: str, value: str):
    """The first version of ``name`` whose tag ``tag`` equals ``value``, or None."""
    return next((v for v in registry.versions(name) if v.tags.get(tag) == value), None)


def load_harness_version(registry: HarnessRegistry, ref: str) -> tuple[HarnessConfig, str]:
    """The config behind ``name@alias`` or ``name/version``, and its resolved version label ``name/N``."""
    version = registry.resolve(ref)
    data = registry.load_dict(version.run_id, CONFIG_FILE)
    return HarnessConfig.model_validate(data), f"{version.name}/{version.version}"
