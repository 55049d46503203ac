"""The curator accepts the harness's step numbering (1..n, with rejected outputs taking a step) and still flags
episodes whose steps repeat, jump past the step count, or disagree with EpisodeEnded.steps."""

from __future__ import annotations

import pytest
from consumer_factory import IDS, suite

from bus_schemas.actions import Finish, ToolCall, ToolError
from bus_schemas.blob_ref import BlobRef
from bus_schemas.events import ActionRejected, ActionTaken, EpisodeEnded, EpisodeStarted, ObservationReturned
from consumers.common.episode import rebuild_episode
from consumers.curator.checks import malformed

pytestmark = pytest.mark.unit


def _episode(numbers, rejected=(), ended_steps=None):
    task = next(t for t in suite() if t.split == "train")
    ids = {**IDS, "task_id": task.task_id, "episode_id": "ep-h"}
    events = [
        EpisodeStarted(
            **ids,
            backend="sandbox",
            trust_level="exact",
            policy_version="p",
            harness_version="h",
            seed=1,
            budgets=task.budgets,
        )
    ]
    for k in rejected:
        events.append(
            ActionRejected(
                **ids,
                step=k,
                raw_output=BlobRef(sha256="a" * 64, size=1),
                error=ToolError(code="parse_error", message="no action"),
                input_tokens=1,
                output_tokens=1,
            )
        )
    for i, step in enumerate(numbers):
        last = i == len(numbers) - 1
        action = Finish(answer="done") if last else ToolCall(name="noop")
        events.append(ActionTaken(**ids, step=step, action=action, input_tokens=1, output_tokens=1))
        if not last:
            events.append(ObservationReturned(**ids, step=step, result="ok"))
    ended = EpisodeEnded(
        **ids,
        reason="finished",
        steps=ended_steps if ended_steps is not None else len(numbers) + len(rejected),
        input_tokens=1,
        output_tokens=1,
        tool_calls=len(numbers) - 1,
        wall_time_s=1.0,
        answer="done",
    )
    return task, rebuild_episode([*events, ended], ended)


def _structural(reasons):
    return [r for r in reasons if r.startswith(("inconsistent", "truncated"))]


@pytest.mark.parametrize(("numbers", "rejected"), [([0, 1, 2], ()), ([1, 2, 3], ()), ([1, 3], (2,))])
def test_consistent_numberings_pass(numbers, rejected):
    assert _structural(malformed(*_episode(numbers, rejected))) == []


@pytest.mark.parametrize(("numbers", "ended_steps"), [([1, 1], None), ([1, 2, 3], 5), ([1, 9], None)])
def test_inconsistent_numberings_are_flagged(numbers, ended_steps):
    assert any(r.startswith("inconsistent") for r in malformed(*_episode(numbers, ended_steps=ended_steps)))
