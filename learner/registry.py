"""Model lineage in the registry: one MLflow run per training run (nested under its flywheel run, with its loss
curve and its training set as a dataset input), a tagged model version, ``@candidate``, promotion to
``@production`` by the dev evaluator, and hot reload of ``@production`` by rollout workers."""

from __future__ import annotations

import io
import logging
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Event, Producer, new_event_id
from bus_schemas.events.training import (
    Algorithm,
    DevSetEvaluated,
    ModelVersionRegistered,
    TrainingRunCompleted,
    TrainingRunStarted,
)
from infra.blobs.port import BlobStore
from infra.registry.port import Registry, VersionNotFound, VersionRef
from learner.tracking import ROLE_TAG, TRAINING_ROLE, log_dev_evaluation, parent_run, training_dataset

PRODUCER = Producer(service="learner", version="0.1.0")
CHECKPOINT_MEDIA_TYPE = "application/x-tar"
CANDIDATE, PRODUCTION = "candidate", "production"
ARTIFACT_PATH = "checkpoint"  # where producers/rollout expects a version's files
SERVABLE_PATH = "model"  # the same checkpoint as an MLflow pyfunc: the registered version's source, servable
EVENTS_FILE = "events.json"  # the events a registration publishes, kept with its run for a redelivered request
log = logging.getLogger("flywheel.registry")
REGISTRATION_EVENTS = frozenset({"TrainingRunStarted", "TrainingRunCompleted", "ModelVersionRegistered"})
"""What :func:`register_checkpoint` returns, beside the companions the caller publishes with them."""
REQUEST_TAG = "training_request"  # the event id of the TrainingRequested a version answers


@dataclass(frozen=True)
class Lineage:
    """Everything that made a checkpoint: data (digest, offsets, manifest blob), harness, parent, knobs, results."""

    model_name: str
    algorithm: Algorithm
    dataset_digest: str
    dataset_manifest: BlobRef
    source_offsets: dict[str, int]
    harness_version: str
    parent_version: str | None
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    steps: int = 0
    wall_time_s: float = 0.0
    history: tuple[tuple[int, dict[str, float]], ...] = ()
    """Per-step metrics of the run (step, {name: value}): the loss curve, RL's per-step reward and clipping."""
    dataset_profile: dict[str, Any] = field(default_factory=dict)
    """Counts of the training set (examples, self-generated examples) shown with the dataset input."""
    dataset_file: Path | None = None
    """The training set's rows exported (Parquet): logged with the run, the source file of its dataset input."""


def checkpoint_blob(blobs: BlobStore, checkpoint: Path) -> BlobRef:
    """The checkpoint directory as a deterministic tar (sorted names, zeroed times) in the blob store."""
    return blobs.put(checkpoint_tar(checkpoint), CHECKPOINT_MEDIA_TYPE)


def checkpoint_tar(checkpoint: Path) -> bytes:
    """The deterministic tar of a checkpoint directory: its sha256 is the registered ``checkpoint_sha256``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(p for p in checkpoint.rglob("*") if p.is_file()):
            info = tar.gettarinfo(str(path), arcname=str(path.relative_to(checkpoint)))
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            with path.open("rb") as handle:
                tar.addfile(info, handle)
    return buffer.getvalue()


def register_checkpoint(
    registry: Registry,
    blobs: BlobStore,
    checkpoint: Path,
    lineage: Lineage,
    *,
    run_id: str,
    round: int | None = None,
    request_id: str | None = None,
    companions: Sequence[Event] = (),
) -> tuple[VersionRef, list[Event]]:
    """Log the run with its lineage, register the version with tags, alias it ``@candidate``.

    Returns the version and the events to publish (TrainingRunStarted, TrainingRunCompleted,
    ModelVersionRegistered), whose blobs are already stored. With ``request_id`` (the TrainingRequested it
    answers) the version is tagged with it and the run keeps ``companions`` + those events, so a redelivered
    request is answered from the registry (:func:`registered_for_request`) instead of training a second version.
    """
    blob = checkpoint_blob(blobs, checkpoint)
    tags = {
        "algorithm": lineage.algorithm,
        "dataset_digest": lineage.dataset_digest,
        "harness_version": lineage.harness_version,
        "parent_version": lineage.parent_version or "",
        "checkpoint_sha256": blob.sha256,
        "flywheel_run_id": run_id,
        **({REQUEST_TAG: request_id} if request_id else {}),
    }
    params = {**lineage.params, "dataset_digest": lineage.dataset_digest, "harness_version": lineage.harness_version}
    params["parent_version"] = lineage.parent_version or "none"
    run_name = f"round-{round}-{lineage.algorithm}" if round is not None else f"{lineage.algorithm}-{run_id}"
    mlflow_run = registry.start_run(
        lineage.model_name,
        run_name=run_name,
        params=params,
        tags={**tags, ROLE_TAG: TRAINING_ROLE, "round": "" if round is None else str(round)},
        parent_run_id=parent_run(registry, lineage.model_name, run_id),
    )
    registry.log_metric_history(mlflow_run, lineage.history)
    registry.log_metrics(mlflow_run, lineage.metrics, step=lineage.steps)
    dataset = training_dataset(
        lineage.model_name,
        lineage.dataset_digest,
        lineage.dataset_manifest,
        lineage.source_offsets,
        lineage.dataset_profile,
        lineage.dataset_file,
    )
    registry.log_dataset(mlflow_run, dataset, context="training")
    registry.log_dict(
        mlflow_run,
        {
            "source_offsets": lineage.source_offsets,
            "dataset_manifest": lineage.dataset_manifest.model_dump(mode="json"),
        },
        "lineage.json",
    )
    registry.log_artifacts(mlflow_run, checkpoint, ARTIFACT_PATH)
    registry.log_servable_model(mlflow_run, checkpoint, SERVABLE_PATH)
    envelope = dict(producer=PRODUCER, run_id=run_id, round=round)
    events = _registration_events(lineage, blob, mlflow_run, envelope)
    # The version number is only known after registering: the stored copy carries a placeholder, filled in on load.
    registry.log_dict(mlflow_run, {"events": [_event_json(e) for e in (*companions, *events)]}, EVENTS_FILE)
    registry.end_run(mlflow_run)
    version = registry.register_version(lineage.model_name, mlflow_run, SERVABLE_PATH, tags=tags)
    if request_id:
        settled = _first_registered(registry, lineage.model_name, request_id, version)
        if settled is not None:
            return settled
    registry.set_alias(lineage.model_name, CANDIDATE, version.version)
    return version, _with_version(events, version)


def _first_registered(
    registry: Registry, model_name: str, request_id: str, ours: VersionRef
) -> tuple[VersionRef, list[Event]] | None:
    """When two trainers answered the same request (a zombie that resumed after the group gave its partition to
    another, or two replicas that both looked the request up before either registered), the version registered
    first answers it and every later one is deleted by the trainer that registered it. Each trainer checks after
    its own registration, so the first one sees no earlier version and keeps its own, and every later one sees
    the first. None when ``ours`` is the first; else the first version and its stored events."""
    tagged = [v for v in registry.versions(model_name) if v.tags.get(REQUEST_TAG) == request_id]
    first = min(tagged, key=lambda v: int(v.version), default=ours)
    if first.version == ours.version:
        return None
    log.warning(
        "%s/%s answers training request %s, registered before ours (%s), which is deleted: two trainers "
        "worked on one request",
        model_name,
        first.version,
        request_id,
        ours.version,
    )
    registry.delete_version(model_name, ours.version)
    stored = _stored_events(registry, model_name, first)
    return first, [e for e in stored if e.event_type in REGISTRATION_EVENTS]  # the caller adds its companions


def _stored_events(registry: Registry, model_name: str, version: VersionRef) -> list[Event]:
    """The events kept with ``version``'s run (``EVENTS_FILE``), with its number filled in; sets ``@candidate``."""
    from bus_schemas.codec import decode

    stored = registry.load_dict(version.run_id or "", EVENTS_FILE)["events"]
    registry.set_alias(model_name, CANDIDATE, version.version)
    return _with_version([decode(orjson.dumps(e)) for e in stored], version)


def registered_for_request(registry: Registry, model_name: str, request_id: str) -> list[Event] | None:
    """The events of the version registered for TrainingRequested ``request_id``; None if none was registered.

    A trainer that crashed after registering and before its commit gets the request again; it answers with
    the same events (same ids) instead of registering a second version.
    """
    tagged = [v for v in registry.versions(model_name) if v.tags.get(REQUEST_TAG) == request_id]
    found = min(tagged, key=lambda v: int(v.version), default=None)  # the first answers (_first_registered)
    if found is None or found.run_id is None:
        return None
    return _stored_events(registry, model_name, found)  # the crash may have come before the alias


def _event_json(event: Event) -> dict[str, Any]:
    return orjson.loads(orjson.dumps(event.model_dump(mode="json")))


def _with_version(events: list[Event], version: VersionRef) -> list[Event]:
    return [
        e.model_copy(update={"model_version": version.version, "registry_uri": version.uri})
        if isinstance(e, ModelVersionRegistered)
        else e
        for e in events
    ]


def _registration_events(lineage: Lineage, blob: BlobRef, mlflow_run: str, envelope: dict[str, Any]) -> list[Event]:
    started = TrainingRunStarted(
        **envelope,
        model_name=lineage.model_name,
        training_run_id=mlflow_run,
        algorithm=lineage.algorithm,
        base_model_version=lineage.parent_version,
        dataset=lineage.dataset_manifest,
        source_offsets=lineage.source_offsets,
        config=orjson.loads(orjson.dumps(lineage.params, default=str)),
    )
    completed = TrainingRunCompleted(
        **envelope,
        causation_id=started.event_id,
        model_name=lineage.model_name,
        training_run_id=mlflow_run,
        status="succeeded",
        checkpoint=blob,
        metrics=lineage.metrics,
        steps=lineage.steps,
        wall_time_s=lineage.wall_time_s,
    )
    registered = ModelVersionRegistered(
        **envelope,
        causation_id=completed.event_id,
        model_name=lineage.model_name,
        model_version="0",  # set by _with_version once the registry has numbered the version
        checkpoint=blob,
        training_run_id=mlflow_run,
        parent_version=lineage.parent_version,
        registry_uri="models:/pending",
    )
    return [started, completed, registered]


def record_evaluation(registry: Registry, evaluated: DevSetEvaluated) -> None:
    """Dev scores as tags on the version and metrics on its training run (per capability and Overall)."""
    name, version = evaluated.model_name, evaluated.model_version
    registry.set_version_tag(name, version, "dev_overall", f"{evaluated.overall:.6f}")
    registry.set_version_tag(name, version, "dev_harness_version", evaluated.harness_version)
    ref = registry.resolve(f"{name}/{version}")
    if ref.run_id:
        metrics = {f"dev_{k}": v.success_rate for k, v in evaluated.per_category.items()}
        registry.log_metrics(ref.run_id, {**metrics, "dev_overall": evaluated.overall})
    log_dev_evaluation(registry, evaluated)


def production_overall(registry: Registry, name: str) -> float | None:
    """The recorded dev Overall of ``name@production``; None when there is no production version yet."""
    try:
        ref = registry.resolve(f"{name}@{PRODUCTION}")
    except VersionNotFound:
        return None
    value = ref.tags.get("dev_overall")
    return float(value) if value is not None else 0.0


def promote_if_better(
    registry: Registry, evaluated: DevSetEvaluated, *, require_approval: bool = False, margin: float = 0.0
) -> bool:
    """Point ``@production`` at the evaluated candidate when its Overall beats production's by more than ``margin``.

    With ``require_approval`` the version is tagged ``awaiting_approval`` instead and a human promotes it.
    """
    record_evaluation(registry, evaluated)
    incumbent = production_overall(registry, evaluated.model_name)
    better = incumbent is None or evaluated.overall > incumbent + margin
    if not better:
        return False
    if require_approval:
        registry.set_version_tag(evaluated.model_name, evaluated.model_version, "awaiting_approval", "true")
        return False
    registry.set_alias(evaluated.model_name, PRODUCTION, evaluated.model_version)
    return True


Loader = Callable[[Path, str], Any]
"""(checkpoint directory, version label) -> a policy."""


class ProductionPolicy:
    """What a rollout worker serves: ``name@production``, reloaded when the alias moves (call ``refresh``)."""

    def __init__(self, registry: Registry, name: str, cache_dir: Path, loader: Loader) -> None:
        self._registry, self._name, self._cache, self._loader = registry, name, cache_dir, loader
        self.version: str | None = None
        self.policy: Any = None

    def refresh(self) -> bool:
        """Reload if ``@production`` points at another version; True when it swapped."""
        ref = self._registry.resolve(f"{self._name}@{PRODUCTION}")
        if ref.version == self.version:
            return False
        if ref.run_id is None:
            raise VersionNotFound(f"{self._name}/{ref.version} has no run to download from")
        target = self._cache / f"{self._name}-{ref.version}-{new_event_id()}"
        local = self._registry.download_artifacts(ref.run_id, ARTIFACT_PATH, target)
        self.policy = self._loader(local, f"{self._name}/{ref.version}")
        self.version = ref.version
        return True
