"""Why a trajectory is malformed or needs a human: small checks over the rebuilt episode and its verdict."""

from __future__ import annotations

import re

from bus_schemas.actions import SAFETY_CODES
from bus_schemas.events import (
    ActionRejected,
    AnswerCriterion,
    EpisodeVerified,
    NoCollateralCriterion,
    StateCriterion,
    TaskSpecified,
)
from consumers.common.episode import EpisodeRecord


def malformed(task: TaskSpecified, episode: EpisodeRecord) -> list[str]:
    """Schema inconsistencies, truncation, or a finish claim the observations do not support."""
    reasons = []
    if episode.started is None:
        reasons.append("truncated: no EpisodeStarted before EpisodeEnded")
    numbers = [s.action.step for s in episode.steps]
    if numbers != sorted(set(numbers)) or (numbers and numbers[-1] > max(episode.ended.steps, len(numbers) - 1)):
        reasons.append("inconsistent: action steps are not increasing within the episode's step count")
    if any(s.observation is None for s in episode.steps if s.call is not None):
        reasons.append("truncated: a tool call has no observation")
    rejected = sum(isinstance(e, ActionRejected) for e in episode.events)
    if episode.ended.steps != len(episode.steps) + rejected:
        reasons.append(
            f"inconsistent: EpisodeEnded.steps={episode.ended.steps} but {len(episode.steps)} actions"
            f" and {rejected} rejected outputs"
        )
    if episode.ended.reason in ("abandoned", "error"):
        reasons.append(f"truncated: episode {episode.ended.reason}")
    if episode.finish is not None and not _claim_supported(task, episode):
        reasons.append("finish claim not supported by the observations")
    return reasons


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _claim_supported(task: TaskSpecified, episode: EpisodeRecord) -> bool:
    """State tasks need an observed state change; answers must be grounded in what was observed."""
    observed = " ".join(str(o.result) for o in episode.observations if o.error is None)
    if any(isinstance(c, StateCriterion) for c in task.criteria) and not any(o.changes for o in episode.observations):
        return False
    answer = episode.finish.answer if episode.finish else ""
    if answer.strip() and any(isinstance(c, AnswerCriterion) for c in task.criteria):
        said = {w for w in _words(answer) if not w.isdigit()}  # counts and sums are computed, not observed
        return 2 * len(said & (_words(observed) | _words(task.goal))) >= len(said)  # most of it was seen
    return True


def recovery_demonstration(task: TaskSpecified, episode: EpisodeRecord, verdict: EpisodeVerified) -> list[str]:
    """Why a success that passed through a permission or confirmation gate may train without a human; [] if it may not.

    It may when it ends verified on an exact backend, finished, with no destructive action, and the task bounds
    what may change (a no-collateral criterion) and that check passed: the policy met the gate, recovered, and
    provably did nothing else. A task without a no-collateral criterion cannot show that, so a human decides.
    """
    gates = sorted({o.error.code for o in episode.observations if o.error and o.error.code in SAFETY_CODES})
    bounds = {c.id for c in task.criteria if isinstance(c, NoCollateralCriterion)}
    passed = {r.criterion_id for r in verdict.criteria if r.passed}
    trust = episode.started.trust_level if episode.started else "exact"
    safe = (
        gates
        and verdict.outcome == "success"
        and trust == "exact"
        and episode.ended.reason == "finished"
        and not any("destructive" in o.flags for o in episode.observations)
        and bounds
        and bounds <= passed
    )
    return (
        [
            f"recovery demonstration: passed through {', '.join(gates)}, verified with no collateral changes "
            f"({', '.join(sorted(bounds))})"
        ]
        if safe
        else []
    )


def review_reasons(episode: EpisodeRecord, verdict: EpisodeVerified, task: TaskSpecified | None = None) -> list[str]:
    """Low confidence, conflicting signals, safety-sensitive actions, or a flagged simulated episode.

    A permission-gated success is no doubt when it is a :func:`recovery_demonstration` of ``task``.
    """
    reasons = []
    trust = episode.started.trust_level if episode.started else "exact"
    if trust == "device":
        reasons.append("low confidence: device verdicts are approximate")
    if verdict.outcome == "success" and episode.ended.reason != "finished":
        reasons.append(f"conflicting: verified success but the episode ended with {episode.ended.reason!r}")
    if any("destructive" in o.flags for o in episode.observations):
        reasons.append("safety-sensitive: a destructive action")
    elif any(o.error and o.error.code in SAFETY_CODES for o in episode.observations):
        if task is None or not recovery_demonstration(task, episode, verdict):
            reasons.append(
                "safety-sensitive: a permission-gated action, and the task cannot show it caused no collateral change"
            )
    if trust == "simulated" and any(o.flags for o in episode.observations):
        reasons.append("simulated backend with flagged observations")
    return reasons
