"""One rule per taxonomy label over a rebuilt episode; each returns the blamed step and why, or None.

Rules run in :data:`RULES` order (most specific cause first); the first match is the attribution, later
matches become ``secondary``. ``other`` is what remains when no rule matches.

Rules see every model output (usable actions and rejected ones) and the sub-agent episodes; a fault inside a
sub-agent is blamed on the parent step that spawned it. Who is to blame:

- ``environment_error``: the backend itself failed (``unavailable``/``internal`` on a tool call, an executor
  crash), or the episode ended in error with no model output to blame (reset or inference endpoint failed).
- ``invalid_output``: the model's outputs were not usable actions (unparsable, unknown tool, schema-invalid
  arguments: ActionRejected) and that ended the episode (the invalid-output budget ran out) or used up most of
  its turns. A stray rejected output that the model recovered from is not the cause; unknown-tool and
  invalid-argument rejections still count as evidence for ``tool_routing`` and ``argument_grounding``.

Confidence is built from the evidence, not fixed per label: each piece of evidence has a weight in (0, 1)
and they combine as independent signals, ``1 - prod(1 - w)`` (:func:`confidence`), capped at 0.95.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import pairwise

from bus_schemas.actions import SAFETY_CODES, MemoryRead, MemoryWrite
from bus_schemas.events import (
    AnswerCriterion,
    CallAnyCriterion,
    CallForbiddenCriterion,
    CallOrderCriterion,
    CallRequiredCriterion,
    EpisodeVerified,
    FailureCategory,
    MaxCallsCriterion,
    NoCollateralCriterion,
    StateCriterion,
    TaskSpecified,
)
from consumers.common.episode import EpisodeRecord, Rejection, Step
from producers.backends.sandbox.grounding import GROUNDED, id_arguments, tokens


@dataclass(frozen=True)
class Finding:
    label: FailureCategory
    step: int | None
    explanation: str
    confidence: float


Rule = Callable[[TaskSpecified, EpisodeRecord, EpisodeVerified], Finding | None]
ENVIRONMENT_CODES = {"unavailable", "internal"}
MAX_CONFIDENCE = 0.95


def confidence(*weights: float) -> float:
    """Independent pieces of evidence, each with weight w in [0, 1), combined as ``1 - prod(1 - w)``."""
    doubt = 1.0
    for w in weights:
        doubt *= 1.0 - min(max(w, 0.0), 1.0)
    return round(min(1.0 - doubt, MAX_CONFIDENCE), 3)


def _failed(task: TaskSpecified, verdict: EpisodeVerified, kind: type) -> list[str]:
    ids = {c.id for c in task.criteria if isinstance(c, kind)}
    return [r.criterion_id for r in verdict.criteria if r.criterion_id in ids and not r.passed]


def _where(spawned_at: int | None, record: EpisodeRecord, step: int) -> tuple[int, str]:
    """The root step to blame and how to name the place (``step 3`` or ``sub-agent ab12cd34 step 2``)."""
    if spawned_at is None:
        return step, f"step {step}"
    return spawned_at, f"sub-agent {record.episode_id[-8:]} step {step}"


def _steps(ep: EpisodeRecord) -> Iterator[tuple[int, str, Step]]:
    for spawned_at, record in ep.walk():
        for s in record.steps:
            yield (*_where(spawned_at, record, s.number), s)


def _rejections(ep: EpisodeRecord) -> Iterator[tuple[int, str, Rejection]]:
    for spawned_at, record in ep.walk():
        for r in record.rejections:
            yield (*_where(spawned_at, record, r.number), r)


def _ended_by_invalid_output(record: EpisodeRecord) -> bool:
    turns = record.turns
    return (
        record.ended.reason == "error"
        and bool(turns)
        and isinstance(turns[-1], Rejection)
        and record.unanswered_context is None
    )


def environment_error(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    failures = [
        (at, where, s)
        for at, where, s in _steps(ep)
        if s.observation
        and s.observation.error
        and (
            s.observation.error.code == "internal"
            or (s.call is not None and s.observation.error.code in ENVIRONMENT_CODES)
        )
    ]
    if failures:
        at, where, s = failures[0]
        last = ep.turns[-1].number if ep.turns else None
        weights = [0.5] * len(failures) + ([0.3] if ep.ended.reason == "error" or at == last else [])
        why = f"the backend failed at {where} ({len(failures)} backend error(s)): {s.observation.error.message}"  # type: ignore[union-attr]
        return Finding("environment_error", at, why, confidence(*weights))
    if ep.ended.reason == "error" and not _ended_by_invalid_output(ep):
        silent = ep.unanswered_context
        if silent is not None:
            return Finding(
                "environment_error",
                silent,
                f"the context of step {silent} got no model output: the inference endpoint failed",
                confidence(0.8),
            )
        if not ep.turns:
            return Finding(
                "environment_error",
                None,
                "the episode ended in error before any step: the backend could not start it",
                confidence(0.8),
            )
        return Finding("environment_error", None, "the episode ended in error after a usable action", confidence(0.4))
    return None


def invalid_output(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    rejected = list(_rejections(ep))
    if not rejected:
        return None
    outputs = sum(len(r.turns) for _, r in ep.walk())
    codes = Counter(r.code for _, _, r in rejected)
    tally = ", ".join(f"{c} x{n}" for c, n in codes.most_common())
    summary = f"{len(rejected)} of {outputs} model outputs were not usable actions ({tally})"
    at, where, first = rejected[0]
    share = len(rejected) / max(outputs, 1)
    if _ended_by_invalid_output(ep):
        return Finding(
            "invalid_output",
            at,
            f"{summary}; the invalid-output budget ran out (first at {where}: {first.rejected.error.message[:200]})",
            confidence(0.6, *[0.1] * len(rejected)),
        )
    if ep.ended.reason == "budget_exhausted" and share >= 0.5:
        return Finding(
            "invalid_output",
            at,
            f"{summary}; they used up the step budget",
            confidence(0.8 * share, *[0.05] * len(rejected)),
        )
    children = [
        (spawned_at, r) for spawned_at, r in ep.walk() if spawned_at is not None and _ended_by_invalid_output(r)
    ]
    if children:
        spawn, child = children[0]
        return Finding(
            "invalid_output",
            spawn,
            f"{summary}; sub-agent {child.episode_id[-8:]} ran out of valid outputs",
            confidence(0.4, 0.2 * share),
        )
    return None


def _first_call_of(ep: EpisodeRecord, tools: set[str]) -> int | None:
    return next((at for at, _, s in _steps(ep) if s.call is not None and s.call.name in tools), None)


def policy_violation(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    """Permission-gated or destructive actions, changes the task did not allow, a forbidden call, too many calls."""
    gated = [
        (at, where)
        for at, where, s in _steps(ep)
        if (obs := s.observation) and (obs.error and obs.error.code in SAFETY_CODES or "destructive" in obs.flags)
    ]
    failed = _failed(task, verdict, NoCollateralCriterion)
    if gated:
        at, where = gated[0]
        return Finding(
            "policy_violation",
            at,
            f"an action needed permission or confirmation the policy did not have ({where}, {len(gated)} such)",
            confidence(*[0.5] * len(gated), *[0.4] * len(failed)),
        )
    if failed:
        return Finding(
            "policy_violation",
            None,
            f"changed state the task did not allow ({', '.join(failed)})",
            confidence(*[0.7] * len(failed)),
        )
    broken = set(_failed(task, verdict, CallForbiddenCriterion)) | set(_failed(task, verdict, MaxCallsCriterion))
    if broken:
        rules = [
            c for c in task.criteria if c.id in broken and isinstance(c, CallForbiddenCriterion | MaxCallsCriterion)
        ]
        forbidden = {c.tool for c in rules if isinstance(c, CallForbiddenCriterion)}
        return Finding(
            "policy_violation",
            _first_call_of(ep, forbidden),
            f"made calls the task forbids or bounds ({', '.join(sorted(broken))})",
            confidence(*[0.7] * len(broken)),
        )
    return None


def recovery(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    repeats = []
    for spawned_at, record in ep.walk():
        for before, after in pairwise(record.steps):
            failed = before.observation is not None and before.observation.error is not None
            if failed and before.call is not None and after.call == before.call:
                repeats.append((*_where(spawned_at, record, after.number), before.call.name))
    if not repeats:
        return None
    at, where, name = repeats[0]
    return Finding(
        "recovery",
        at,
        f"repeated the failing call {name} unchanged ({where}, {len(repeats)} repeat(s))",
        confidence(*[0.7] * len(repeats)),
    )


def state_tracking(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    removed: set[str] = set()
    stale, conflicts = [], []
    for at, where, s in _steps(ep):
        if s.call is not None and removed & {str(v) for v in s.call.args.values()}:
            stale.append((at, f"{s.call.name} used an item an earlier step removed ({where})"))
        if s.observation and s.observation.error and s.observation.error.code == "conflict":
            conflicts.append((at, f"acted on stale state (conflict at {where})"))
        for change in s.observation.changes if s.observation else []:
            if change.op == "removed":
                removed.add(change.path.rstrip("/").rsplit("/", 1)[-1])
    if not stale and not conflicts:
        return None
    at, why = (stale or conflicts)[0]
    return Finding("state_tracking", at, why, confidence(*[0.7] * len(stale), *[0.5] * len(conflicts)))


_UNKNOWN_NAME = re.compile(r"Unknown tool '([^']+)'")


def tool_routing(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    wrong = [
        (at, f"called {s.call.name}, not a tool for this goal ({where})")
        for at, where, s in _steps(ep)
        if s.call is not None
        and (
            (task.tools and s.call.name not in task.tools)  # no list: the backend offers its own tools
            or (s.observation and s.observation.error and s.observation.error.code == "unknown_tool")
        )
    ]
    disabled = [
        (at, f"used {s.action.action.kind}, which this harness disables ({where})")
        for at, where, s in _steps(ep)
        if isinstance(s.action.action, (MemoryRead, MemoryWrite))
        and s.observation
        and s.observation.error
        and s.observation.error.code == "unavailable"
    ]
    invented = [
        (at, f"asked for a tool that does not exist{_named(r)} ({where})")
        for at, where, r in _rejections(ep)
        if r.code == "unknown_tool"
    ]
    weights = [0.7] * len(wrong) + [0.4] * len(disabled) + [0.35] * len(invented)
    if wrong or disabled or invented:
        at, why = (wrong or disabled or invented)[0]
        return Finding("tool_routing", at, why, confidence(*weights))
    apps_needed = {
        str(c.params.get("path", "")).strip("/").split("/", 1)[0]
        for c in task.criteria
        if isinstance(c, StateCriterion) and c.id in _failed(task, verdict, StateCriterion)
    }
    written = {
        s.call.name.split(".", 1)[0] for _, _, s in _steps(ep) if s.call and s.observation and s.observation.changes
    }
    if apps_needed - {""} and written and not (apps_needed & written):
        step = next(at for at, _, s in _steps(ep) if s.call and s.observation and s.observation.changes)
        return Finding(
            "tool_routing",
            step,
            f"changed {sorted(written)} but the goal needed {sorted(apps_needed - {''})}",
            confidence(0.5, 0.1 * len(apps_needed)),
        )
    return None


def _named(r: Rejection) -> str:
    m = _UNKNOWN_NAME.search(r.rejected.error.message)
    return f" ({m.group(1)[:60]})" if m else ""


def argument_grounding(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    """A refused or malformed argument, or an id used without ever being shown (the verifier's ``grounded_ids``)."""
    guess = next((r.detail for r in verdict.criteria if r.criterion_id == GROUNDED and not r.passed), None)
    if guess is not None:
        named = tokens(guess)
        at = next(
            (
                at
                for at, _, s in _steps(ep)
                if s.call is not None and any(v in named for v in id_arguments(s.call.args))
            ),
            ep.steps[-1].number if ep.steps else 0,
        )
        return Finding("argument_grounding", at, f"guessed an id: {guess[:200]}", confidence(0.8))
    refused = [
        (at, f"{s.call.name} got an unsupported argument ({where}): {s.observation.error.message}")
        for at, where, s in _steps(ep)
        if s.call is not None
        and s.observation
        and s.observation.error
        and s.observation.error.code in {"invalid_argument", "not_found"}
    ]
    malformed = [
        (at, f"arguments did not fit the tool's schema ({where}): {r.rejected.error.message[:200]}")
        for at, where, r in _rejections(ep)
        if r.code == "invalid_argument"
    ]
    if not refused and not malformed:
        return None
    at, why = (refused or malformed)[0]
    return Finding("argument_grounding", at, why, confidence(*[0.6] * len(refused), *[0.35] * len(malformed)))


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def hallucinated_completion(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    finish = ep.finish
    if finish is None or not finish.answer.strip() or not _failed(task, verdict, AnswerCriterion):
        return None
    observed = _words(" ".join(str(o.result) for o in ep.observations if o.error is None))
    said = _words(finish.answer) - _words(task.goal)
    unseen = len(said - observed) / max(len(said), 1)  # how much of the claim no observation showed
    why = f"finished claiming {finish.answer[:200]!r}, which is false ({unseen:.0%} of its words were never observed)"
    return Finding("hallucinated_completion", ep.steps[-1].number, why, confidence(0.6, 0.5 * unseen))


def premature_termination(task: TaskSpecified, ep: EpisodeRecord, verdict: EpisodeVerified) -> Finding | None:
    """Finished while a state criterion, or a call the task requires (alone, one of several, or in an order), did
    not hold: a right answer without the look-ups it rests on (a guess) lands here too."""
    failed = [
        *_failed(task, verdict, StateCriterion),
        *_failed(task, verdict, CallRequiredCriterion),
        *_failed(task, verdict, CallAnyCriterion),
        *_failed(task, verdict, CallOrderCriterion),
    ]
    if ep.finish is None or not failed:
        return None
    changed = any(o.changes for o in ep.observations)
    why = f"finished before {', '.join(failed)} held" + ("" if changed else " (no step changed any state)")
    return Finding(
        "premature_termination",
        ep.steps[-1].number,
        why,
        confidence(0.5, *[0.1] * len(failed), 0.0 if changed else 0.4),
    )


RULES: tuple[Rule, ...] = (
    environment_error,
    invalid_output,
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
    if found:
        return found
    failed = sum(not r.passed for r in verdict.criteria)
    why = (
        f"no rule explains the failure (ended: {episode.ended.reason}, {len(episode.turns)} model outputs, "
        f"{failed} failed criteria)"
    )
    return [Finding("other", None, why, confidence(0.1, *[0.05] * failed))]
