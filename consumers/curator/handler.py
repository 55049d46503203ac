"""Pure curation decisions: admit, reject or quarantine a verified episode; honour human review decisions."""

from __future__ import annotations

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Event, Producer, correlate
from bus_schemas.events import (
    EpisodeVerified,
    FailureDiagnosed,
    Provenance,
    ReviewDecided,
    ReviewRequested,
    TaskSpecified,
    TrajectoryAdmitted,
    TrajectoryQuarantined,
    TrajectoryRejected,
)
from consumers.common.episode import EpisodeRecord
from consumers.curator.checks import malformed, recovery_demonstration, review_reasons

VERSION = "0.2.0"  # 0.2.0: recovery demonstrations are admitted without a human (checks.recovery_demonstration)
SIMULATED_WEIGHT = 0.5  # exact sandbox feedback counts fully; an LLM simulator's less


def provenance(task: TaskSpecified, episode: EpisodeRecord) -> Provenance:
    started = episode.started
    return Provenance(
        task_source=task.source,
        backend=started.backend if started else task.backend,
        policy_version=started.policy_version if started else "unknown",
        harness_version=started.harness_version if started else "unknown",
    )


def _common(cause: Event, task: TaskSpecified, episode: EpisodeRecord, reasons: list[str], producer: Producer) -> dict:
    return dict(
        producer=producer,
        **{**correlate(cause), "task_id": task.task_id, "episode_id": episode.episode_id},
        reasons=[r[:1024] for r in reasons],
        category=task.category,
        tags=list(task.tags),
        provenance=provenance(task, episode),
        curator_version=VERSION,
    )


def curate(
    verdict: EpisodeVerified,
    task: TaskSpecified,
    episode: EpisodeRecord,
    bundle: BlobRef,
    first_with_bundle: str | None,
    producer: Producer,
    diagnoses: tuple[FailureDiagnosed, ...] = (),
) -> list[Event]:
    """``first_with_bundle``: the episode that was admitted earlier with the same bundle (a duplicate), if any.
    ``diagnoses``: the failure attributions of the episode; the decision links them (and reacts to the last)."""
    common = _common(diagnoses[-1] if diagnoses else verdict, task, episode, [], producer)
    common["failure_diagnoses"] = [d.event_id for d in diagnoses]
    attributed = [
        f"diagnosed {d.attribution}"
        + (f" at step {d.step}" if d.step is not None else "")
        + f" (confidence {d.confidence:.2f})"
        for d in diagnoses
    ]
    if task.split != "train":
        return [TrajectoryRejected(**{**common, "reasons": [f"{task.split} task: never trained on", *attributed]})]
    if verdict.outcome != "success":
        why = f"verdict {verdict.outcome} (score {verdict.score:.2f}); kept on the log for diagnosis"
        return [TrajectoryRejected(**{**common, "reasons": [why, *attributed]})]
    if bad := malformed(task, episode):
        return [TrajectoryRejected(**{**common, "reasons": bad})]
    if first_with_bundle is not None and first_with_bundle != episode.episode_id:
        return [
            TrajectoryRejected(**{**common, "reasons": [f"duplicate of {first_with_bundle} (same task and actions)"]})
        ]
    if doubts := review_reasons(episode, verdict, task):
        return [
            TrajectoryQuarantined(**{**common, "reasons": doubts}),
            ReviewRequested(
                producer=producer, **correlate(verdict), reasons=doubts, evidence=[bundle, *verdict.evidence]
            ),
        ]
    trusted = (episode.started.trust_level if episode.started else "exact") == "exact"
    reasons = [
        f"verified success ({len(verdict.criteria)} criteria) by {verdict.verifier_version}",
        *recovery_demonstration(task, episode, verdict),
    ]
    return [
        TrajectoryAdmitted(
            **{**common, "reasons": reasons}, trajectory=bundle, weight=1.0 if trusted else SIMULATED_WEIGHT
        )
    ]


def apply_review(
    decision: ReviewDecided, task: TaskSpecified, episode: EpisodeRecord, bundle: BlobRef, producer: Producer
) -> list[Event]:
    """The reviewer's word is final: approve/correct admit, reject rejects, quarantine holds."""
    why = f"review by {decision.reviewer}: {decision.decision}" + (f" ({decision.note})" if decision.note else "")
    common = _common(decision, task, episode, [why], producer)
    if decision.decision == "approve":
        return [TrajectoryAdmitted(**common, trajectory=bundle)]
    if decision.decision == "correct":
        assert decision.corrected_trajectory is not None
        return [TrajectoryAdmitted(**common, trajectory=decision.corrected_trajectory)]
    if decision.decision == "reject":
        return [TrajectoryRejected(**common)]
    return [TrajectoryQuarantined(**common)]
