"""Crafted episodes: hand-written actions and observations for one suite task, rebuilt as the consumers see them."""

from __future__ import annotations

from functools import lru_cache

from bus_schemas.actions import Action, StateChange, ToolError
from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Producer
from bus_schemas.events import (
    ActionRejected,
    ActionTaken,
    Budgets,
    ContextBuilt,
    CriterionResult,
    EpisodeEnded,
    EpisodeStarted,
    EpisodeVerified,
    ObservationReturned,
    TaskSpecified,
)
from consumers.common.episode import EpisodeRecord, rebuild_episode
from producers.tasks import build_task_suite

P = Producer(service="test", version="0")
IDS = dict(producer=P, run_id="run-test", round=0)


@lru_cache(maxsize=1)
def suite() -> tuple[TaskSpecified, ...]:
    return tuple(build_task_suite("run-test"))


def task_with(kinds: set[str], split: str = "train") -> TaskSpecified:
    """The first suite task whose criteria kinds include ``kinds``."""
    return next(t for t in suite() if t.split == split and kinds <= {c.kind for c in t.criteria})


def obs(
    result=None, error: str | None = None, changes: tuple[StateChange, ...] = (), flags: tuple[str, ...] = ()
) -> dict:
    return {
        "result": result,
        "error": ToolError(code=error, message=f"{error} happened") if error else None,
        "changes": list(changes),
        "flags": list(flags),
    }


def episode(
    task: TaskSpecified,
    steps: list[tuple[Action, dict | None]],
    *,
    reason: str = "finished",
    trust: str = "exact",
    started: bool = True,
    episode_id: str = "ep-1",
    answer: str | None = None,
) -> EpisodeRecord:
    ids = {**IDS, "task_id": task.task_id, "episode_id": episode_id}
    events = []
    if started:
        events.append(
            EpisodeStarted(
                **ids,
                backend="sandbox",
                trust_level=trust,
                policy_version="p0",
                harness_version="h0",
                seed=1,
                budgets=Budgets(),
            )
        )
    for i, (action, ob) in enumerate(steps):
        events.append(ActionTaken(**ids, step=i, action=action, input_tokens=1, output_tokens=1))
        if ob is not None:
            events.append(ObservationReturned(**ids, step=i, **ob))
    final = steps[-1][0] if steps else None
    ended = EpisodeEnded(
        **ids,
        reason=reason,
        steps=len(steps),
        input_tokens=1,
        output_tokens=1,
        tool_calls=len(steps),
        wall_time_s=1.0,
        answer=answer if answer is not None else getattr(final, "answer", None),
    )
    events.append(ended)
    return rebuild_episode(events, ended)


def verdict(
    task: TaskSpecified, failed: set[str] | None = None, outcome: str | None = None, episode_id: str = "ep-1"
) -> EpisodeVerified:
    """``failed``: criterion ids that did not pass (default none); ``outcome`` follows unless given."""
    failed = failed or set()
    results = [CriterionResult(criterion_id=c.id, passed=c.id not in failed) for c in task.criteria]
    return EpisodeVerified(
        **IDS,
        task_id=task.task_id,
        episode_id=episode_id,
        outcome=outcome or ("failure" if failed else "success"),
        score=sum(r.passed for r in results) / len(results),
        criteria=results,
        verifier_version="v",
    )


def ids_of(task: TaskSpecified, kind: str) -> set[str]:
    return {c.id for c in task.criteria if c.kind == kind}


RAW = BlobRef(sha256="a" * 64, size=10, media_type="text/plain")


def episode_events(
    task: TaskSpecified,
    turns: list,
    *,
    episode_id: str = "ep-1",
    reason: str = "finished",
    parent: str | None = None,
    context_only: int | None = None,
) -> list:
    """The events a harness publishes, steps numbered from 1 with a ContextBuilt each: ``turns`` are (action,
    observation dict) for a usable output or ("rejected", code) for an unusable one; ``context_only``: a last
    step whose context got no output (the policy call failed)."""
    ids = {**IDS, "task_id": task.task_id, "episode_id": episode_id}
    events = [
        EpisodeStarted(
            **ids,
            backend="sandbox",
            trust_level="exact",
            policy_version="p0",
            harness_version="h0",
            seed=1,
            budgets=Budgets(),
            parent_episode_id=parent,
        )
    ]
    for i, (what, ob) in enumerate(turns, start=1):
        events.append(ContextBuilt(**ids, step=i, context=RAW, token_count=5))
        if what == "rejected":
            error = ToolError(code=ob, message=f"Unknown tool 'x.{i}'." if ob == "unknown_tool" else f"{ob} at {i}")
            events += [
                ActionRejected(**ids, step=i, raw_output=RAW, error=error, input_tokens=1, output_tokens=1),
                ObservationReturned(**ids, step=i, error=error, blob=RAW),
            ]
        else:
            events.append(ActionTaken(**ids, step=i, action=what, input_tokens=1, output_tokens=1))
            if ob is not None:
                events.append(ObservationReturned(**ids, step=i, **ob))
    if context_only is not None:
        events.append(ContextBuilt(**ids, step=context_only, context=RAW, token_count=5))
    events.append(
        EpisodeEnded(
            **ids,
            reason=reason,
            steps=len(turns),
            input_tokens=1,
            output_tokens=1,
            tool_calls=0,
            wall_time_s=1.0,
            answer=getattr(turns[-1][0], "answer", None) if turns else None,
        )
    )
    return events
