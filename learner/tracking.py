"""How a flywheel run looks in the experiment tracker: one parent run per ``flywheel run``, and each round's
training, dev-evaluation and harness-revision runs nested under it, all in the model's experiment; training data
as run inputs; a revision's dev A/B result on its version's run.

Consumers find the parent by its tags (the flywheel run id and role), so a trainer in another process nests its
run without being told anything but the run id its events carry. Without a parent (``flywheel train`` on its
own) the runs are top-level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bus_schemas.blob_ref import BlobRef
from bus_schemas.events.harness import HarnessRevisionDecided
from bus_schemas.events.training import DevSetEvaluated
from infra.registry.port import DatasetInfo, Registry

RUN_TAG = "flywheel_run_id"
ROLE_TAG = "flywheel_role"
PARENT_ROLE = "flywheel-run"
TRAINING_ROLE = "training"
EVALUATION_ROLE = "dev-evaluation"
HARNESS_REVISION_ROLE = "harness-revision"
EVENT_TAG = "flywheel_event_id"
"""The event a run records (a DevSetEvaluated)."""
CAUSE_TAG = "flywheel_cause_id"
"""The input that produced that event (the verdict that completed a dev group), else the event itself. A consumer
killed after logging the run and before its commit gets the same input again and builds a new event with a new id:
the run is found by its cause, so it is logged once."""


def parent_run(registry: Registry, experiment: str | None, run_id: str) -> str | None:
    """The MLflow run of flywheel run ``run_id`` in ``experiment`` (None: in any experiment, for a consumer that
    does not know the model's name); None when the run has none."""
    return registry.find_run(experiment, {RUN_TAG: run_id, ROLE_TAG: PARENT_ROLE})


def harness_revision_run(registry: Registry, run_id: str, round: int | None) -> dict[str, Any]:
    """Where a harness revision's MLflow run goes: nested under flywheel run ``run_id``'s parent run (in the
    parent's experiment, the UI nests only within one) with the revision role and round as tags; without a
    parent (a revision outside a flywheel run) the tagged run is top-level in the ``harness`` experiment.
    The keyword arguments of :func:`harness_service.versions.publish_harness_version`."""
    parent = parent_run(registry, None, run_id)
    tags = {RUN_TAG: run_id, ROLE_TAG: HARNESS_REVISION_ROLE, "round": "" if round is None else str(round)}
    return {"parent_run_id": parent, "run_tags": tags}


def log_revision_decision(registry: Registry, decided: HarnessRevisionDecided, version: str, round: int | None) -> None:
    """The dev A/B result of a harness revision on the run of its version ``name/N``, at ``step`` = round: the
    paired metrics (``ab_`` prefixed) and ``ab_accepted`` (1 accepted, 0 rejected). Metrics, not params: a version
    A/B-tested again in a later round adds a point instead of clashing with an immutable param."""
    ref = registry.resolve(version)
    if ref.run_id is None:
        return
    metrics = {f"ab_{k}": v for k, v in decided.metrics.items()}
    metrics["ab_accepted"] = 1.0 if decided.decision == "accepted" else 0.0
    registry.log_metrics(ref.run_id, metrics, step=round or 0)


def training_dataset(
    model_name: str,
    digest: str,
    manifest: BlobRef,
    source_offsets: dict[str, int],
    profile: dict[str, Any] | None = None,
    file: Path | None = None,
) -> DatasetInfo:
    """A training set as MLflow shows it: named by model and digest, its source the event offsets it was read
    up to and the blob of its manifest (the episode ids and hashes it holds), and with ``file`` (its rows
    exported: the admitted trajectories' training examples) an ``mlflow.data`` dataset of that file."""
    return DatasetInfo(
        name=f"{model_name}-train-{digest.removeprefix('sha256:')[:12]}",
        digest=digest,
        source={
            "event_offsets": dict(sorted(source_offsets.items())),
            "manifest_blob": manifest.sha256,
            "manifest_media_type": manifest.media_type,
            "digest": digest,
        },
        profile=dict(profile or {}),
        file=file,
    )


def log_dev_evaluation(registry: Registry, evaluated: DevSetEvaluated) -> str:
    """A dev-evaluation run (nested under the flywheel run when there is one): per-category and Overall success,
    cost per task, the model and harness versions evaluated. Idempotent by the event's cause (``CAUSE_TAG``)."""
    experiment = evaluated.model_name
    cause = evaluated.causation_id or evaluated.event_id
    found = registry.find_run(experiment, {CAUSE_TAG: cause})
    if found is not None:
        return found
    subject = (
        f"{evaluated.model_name}/{evaluated.model_version}"
        if evaluated.evaluates == "model"
        else evaluated.harness_version
    )
    prefix = f"round-{evaluated.round}-" if evaluated.round is not None else ""
    run = registry.start_run(
        experiment,
        run_name=f"{prefix}dev-{evaluated.evaluates}-{subject.replace('/', '-')}",
        params={
            "model_version": f"{evaluated.model_name}/{evaluated.model_version}",
            "harness_version": evaluated.harness_version,
            "evaluates": evaluated.evaluates,
            "split": evaluated.split,
            **{f"tasks_{k}": v.tasks for k, v in evaluated.per_category.items()},
        },
        tags={
            RUN_TAG: evaluated.run_id,
            ROLE_TAG: EVALUATION_ROLE,
            EVENT_TAG: evaluated.event_id,
            CAUSE_TAG: cause,
            "round": "" if evaluated.round is None else str(evaluated.round),
        },
        parent_run_id=parent_run(registry, experiment, evaluated.run_id),
    )
    metrics = {f"dev_{k}": v.success_rate for k, v in evaluated.per_category.items()}
    metrics.update(
        dev_overall=evaluated.overall,
        tokens_per_task=evaluated.tokens_per_task,
        tool_calls_per_task=evaluated.tool_calls_per_task,
    )
    registry.log_metrics(run, metrics, step=evaluated.round or 0)
    registry.end_run(run)
    return run
