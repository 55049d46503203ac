"""Pure judgement of one episode: criteria over the backend's evidence, by the judge its backend registered.

Judges are plugins (``planner_flywheel.judges`` entry points, ``producers/backends/plugins.py``) keyed by backend
name; a backend without one, or whose judge fails to load, gets an ``error`` verdict that says why.
"""

from __future__ import annotations

from collections.abc import Callable

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Producer, correlate
from bus_schemas.events import CriterionResult, EpisodeEnded, EpisodeVerified, TaskSpecified
from producers.backends import plugins
from producers.backends.base import Evidence
from producers.backends.evidence import LeanEvidence
from producers.backends.sandbox.verify import VerificationResult

VERSION = "0.2.0"  # 0.2.0: answers must commit to one value (verify.check_answer)
Check = Callable[[TaskSpecified, Evidence | LeanEvidence, str], VerificationResult]


def _unjudged(
    ended: EpisodeEnded, task: TaskSpecified, producer: Producer, why: str, evidence: list[BlobRef]
) -> EpisodeVerified:
    # a task that leaves its checks to a judge still gets the reason, as the judge's one criterion
    ids = [c.id for c in task.criteria] or ["judge"]
    results = [CriterionResult(criterion_id=i, passed=False, detail=why) for i in ids]
    return EpisodeVerified(
        producer=producer,
        **{**correlate(ended), "task_id": task.task_id, "episode_id": ended.episode_id},
        outcome="error",
        score=0.0,
        criteria=results,
        evidence=evidence,
        verifier_version=VERSION,
    )


def judge(
    ended: EpisodeEnded, task: TaskSpecified, backend: str, evidence: Evidence | LeanEvidence | None, producer: Producer
) -> EpisodeVerified:
    """Success only when every criterion passes; ``error`` when the episode cannot be judged at all."""
    refs = [ended.final_state] if ended.final_state is not None else []
    try:
        check: Check | None = plugins.judge(backend)
    except plugins.PluginError as exc:
        return _unjudged(ended, task, producer, str(exc), refs)
    if check is None:
        return _unjudged(ended, task, producer, f"no verifier for backend {backend!r}", refs)
    if evidence is None:
        return _unjudged(ended, task, producer, f"episode ended ({ended.reason}) without evidence", refs)
    try:
        result = check(task, evidence, ended.answer or "")
    except TypeError as exc:  # evidence of the wrong shape: the episode is unjudgeable, not failed
        return _unjudged(ended, task, producer, str(exc), refs)
    criteria = [
        CriterionResult(criterion_id=r.id, passed=r.passed, detail=r.detail[:16384], evidence=refs)
        for r in result.criteria
    ]
    passed = sum(r.passed for r in criteria)
    return EpisodeVerified(
        producer=producer,
        **{**correlate(ended), "task_id": task.task_id, "episode_id": ended.episode_id},
        outcome="success" if result.outcome else "failure",
        score=passed / len(criteria) if criteria else 0.0,
        criteria=criteria,
        evidence=refs,
        verifier_version=VERSION,
    )
