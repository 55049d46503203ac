"""One rule per taxonomy label over a rebuilt episode; each returns the blamed step and why, or None.

Rules run in :data:`RULES` order (most specific cause first); the first match is the attribution, later
matches become ``secondary``. ``other`` is what remains when no rule matches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bus_schemas.events import AnswerCriterion, EpisodeVerified, FailureCategory, NoCollateralCriterion, StateCriterion, TaskSpecified
from consumers.common.episode import EpisodeRecord


@dataclass(frozen=True)
class Finding:
    label: FailureCategory
    step: int | None
    explanation: str
    confidence: float


Rule = Callable[[TaskSpecified, EpisodeRecord, EpisodeVerified], Finding | None]
ENVIRONMENT_CODES = {"unavailable", "internal"}
SAFETY_CODES = {"permission_denied", "needs_confirmation"}


def _failed(task: TaskSpecified, verdict: EpisodeVerified, kind: type) -> list[str]:
    ids = {c.id for c in task.criteria if isinstance(c, kind)}
    return [r.criterion_id for r in verdict.criteria if r.criterion_id in ids and not r.passed]


def environment_error(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    for s in ep.steps:
        if s.observation and s.observation.error and s.observation.error.code in ENVIRONMENT_CODES:
            return Finding("environment_error", s.action.step, f"the backend failed: {s.observation.error.message}", 0.9)
    if ep.ended.reason == "error":
        return Finding("environment_error", None, "the episode ended with an error", 0.7)
    return None


def policy_violation(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    for s in ep.steps:
        obs = s.observation
        if obs and (obs.error and obs.error.code in SAFETY_CODES or "destructive" in obs.flags):
            return Finding("policy_violation", s.action.step, "an action needed permission or confirmation the policy did not have", 0.8)
    if failed := _failed(task, verdict, NoCollateralCriterion):
        return Finding("policy_violation", None, f"changed state the task did not allow ({', '.join(failed)})", 0.75)
    return None


def recovery(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    for before, after in zip(ep.steps, ep.steps[1:]):
        failed = before.observation is not None and before.observation.error is not None
        if failed and before.call is not None and after.call == before.call:
            return Finding("recovery", after.action.step, f"repeated the failing call {before.call.name} unchanged", 0.85)
    return None


def state_tracking(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    removed: set[str] = set()
    for s in ep.steps:
        if s.call is not None and removed & {str(v) for v in s.call.args.values()}:
            return Finding("state_tracking", s.action.step, f"{s.call.name} used an item an earlier step removed", 0.8)
        if s.observation and s.observation.error and s.observation.error.code == "conflict":
            return Finding("state_tracking", s.action.step, "acted on stale state (conflict)", 0.7)
        for change in s.observation.changes if s.observation else []:
            if change.op == "removed":
                removed.add(change.path.rstrip("/").rsplit("/", 1)[-1])
    return None


def tool_routing(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    for s in ep.steps:
        if s.call is not None and (s.call.name not in task.tools or (s.observation and s.observation.error and s.observation.error.code == "unknown_tool")):
            return Finding("tool_routing", s.action.step, f"called {s.call.name}, not a tool for this goal", 0.85)
    apps_needed = {str(c.params.get("path", "")).strip("/").split("/", 1)[0] for c in task.criteria if isinstance(c, StateCriterion) and c.id in _failed(task, verdict, StateCriterion)}
    written = {s.call.name.split(".", 1)[0] for s in ep.steps if s.call and s.observation and s.observation.changes}
    if apps_needed - {""} and written and not (apps_needed & written):
        step = next(s.action.step for s in ep.steps if s.call and s.observation and s.observation.changes)
        return Finding("tool_routing", step, f"changed {sorted(written)} but the goal needed {sorted(apps_needed - {''})}", 0.6)
    return None


def argument_grounding(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    for s in ep.steps:
        obs = s.observation
        if s.call is not None and obs and obs.error and obs.error.code in {"invalid_argument", "not_found"}:
            return Finding("argument_grounding", s.action.step, f"{s.call.name} got an unsupported argument: {obs.error.message}", 0.75)
    return None


def hallucinated_completion(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    finish = ep.finish
    if finish is not None and finish.answer.strip() and _failed(task, verdict, AnswerCriterion):
        return Finding("hallucinated_completion", ep.steps[-1].action.step, f"finished claiming {finish.answer[:200]!r}, which is false", 0.8)
    return None


def premature_termination(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    if ep.finish is not None and (failed := _failed(task, verdict, StateCriterion)):
        return Finding("premature_termination", ep.steps[-1].action.step, f"finished before {', '.join(failed)} held", 0.7)
    return None


RULES: tuple[Rule, ...] = (
    environment_error,
    policy_violation,
    recovery,
    state_tracking,
    tool_routing,
    argument_grounding,
    hallucinated_completion,
    premature_termination,
)


def findings(task: TaskSpecified, episode: EpisodeRecord, verdict: EpisodeVerified) -> list[Finding]:
    """Every matching rule's finding, in priority order; ``other`` when none matches."""
    found = [f for rule in RULES if (f := rule(task, episode, verdict)) is not None]
    return found or [Finding("other", None, f"no rule explains the failure (ended: {episode.ended.reason})", 0.3)]
