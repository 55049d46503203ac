"""Sub-agent costs roll up: a parent's EpisodeEnded counts its sub-agents' tokens and tool calls (CARE charges them)."""

from __future__ import annotations

import pytest
from harness_fakes import EventList, MemoryBlobs, NotesBackend, make_task

from bus_schemas.actions import Finish, SubagentSpawn, ToolCall
from bus_schemas.events.episodes import ActionTaken, EpisodeEnded, EpisodeStarted
from harness_service.config import HarnessConfig
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import Harness, RunIds, run_episode
from harness_service.skills.library import SkillLibrary

pytestmark = pytest.mark.unit
ADD = ToolCall(name="notes.add", args={"text": "hello"})


def test_sub_agent_tokens_and_tool_calls_roll_up_into_the_parent_episode() -> None:
    inner = SubagentSpawn(goal="Add the note twice", tools=["notes.add"], max_steps=4)
    script = [ADD, inner, ADD, ADD, Finish(answer="added"), Finish(answer="done")]
    events = EventList()
    harness = Harness(
        config=HarnessConfig(),
        policy=ScriptedPolicy(script, "reference"),
        blobs=MemoryBlobs(),  # type: ignore[arg-type]
        events=events,
        skills=SkillLibrary.empty(),
    )
    outcome = run_episode(harness, make_task(), NotesBackend(), RunIds(run_id="run-1", round=0))  # type: ignore[arg-type]
    parent, child = [e for e in events if isinstance(e, EpisodeStarted)]
    ended = {e.episode_id: e for e in events if isinstance(e, EpisodeEnded)}

    def own(episode_id: str, field: str) -> int:
        return sum(getattr(e, field) for e in events if isinstance(e, ActionTaken) and e.episode_id == episode_id)

    kid, top = ended[child.episode_id], ended[parent.episode_id]
    assert kid.tool_calls == 2 and kid.output_tokens == own(child.episode_id, "output_tokens")
    assert top.tool_calls == 1 + 2  # its own call and the sub-agent's two
    for field in ("input_tokens", "output_tokens"):
        assert (
            getattr(top, field)
            == own(parent.episode_id, field) + own(child.episode_id, field)
            > own(parent.episode_id, field)
        )
    assert top.steps == 3  # its own model turns only (spawn, add, finish): step numbering stays the parent's
    assert (outcome.tool_calls, outcome.output_tokens) == (top.tool_calls, top.output_tokens)
