"""The episode loop on a toy backend: event order and content, feedback, budgets, memory, skills and sub-agents."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from harness_fakes import EventList, MemoryBlobs, NotesBackend, make_task

from bus_schemas.actions import (
    Finish,
    MemoryRead,
    MemoryWrite,
    SkillLoad,
    SubagentSpawn,
    ToolCall,
)
from bus_schemas.codec import encode
from bus_schemas.events.episodes import (
    ActionTaken,
    ContextBuilt,
    EpisodeEnded,
    EpisodeStarted,
    ObservationReturned,
)
from bus_schemas.events.tasks import Budgets, MemoryFact
from harness_service.config import HarnessBudgets, HarnessConfig
from harness_service.context.messages import ChatMessage, decode_context
from harness_service.memory.store import MemoryStore
from harness_service.policy.base import PolicyOutput
from harness_service.policy.pricing import Price, PriceTable
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import EpisodeOutcome, Harness, RunIds, run_episode
from harness_service.skills.library import SkillLibrary
from harness_service.skills.skill import Skill
from producers.backends.evidence import decode_evidence

pytestmark = pytest.mark.unit

ADD = ToolCall(name="notes.add", args={"text": "hello"})


def run(
    script: Sequence[object], config: HarnessConfig | None = None, memory: MemoryStore | None = None, **task: object
) -> tuple[EpisodeOutcome, EventList, MemoryBlobs, NotesBackend]:
    events, blobs, backend = EventList(), MemoryBlobs(), NotesBackend()
    skills = SkillLibrary(
        [Skill(name="note-taking", tools=["notes.*"], when_to_use="Notes.", body="SKILL BODY: search first.")], "v1"
    )
    harness = Harness(
        config=config or HarnessConfig(),
        policy=ScriptedPolicy(script, "reference"),  # type: ignore[arg-type]
        blobs=blobs,
        events=events,
        skills=skills,
        prices=PriceTable(prices={"scripted:reference": Price(input_per_mtok=1.0, output_per_mtok=2.0)}),
    )
    outcome = run_episode(harness, make_task(**task), backend, RunIds(run_id="run-1", round=2, cause=None), memory)  # type: ignore[arg-type]
    return outcome, events, blobs, backend


def contexts(events: EventList, blobs: MemoryBlobs) -> list[list[ChatMessage]]:
    return [decode_context(blobs.get(e.context)) for e in events if isinstance(e, ContextBuilt)]


def test_a_scripted_episode_emits_its_events_in_order() -> None:
    outcome, events, blobs, backend = run([ADD, Finish(answer="hello")])
    assert events.types() == [
        "EpisodeStarted",
        "ContextBuilt",
        "ActionTaken",
        "ObservationReturned",
        "ContextBuilt",
        "ActionTaken",
        "EpisodeEnded",
    ]
    started, ended = events[0], events[-1]
    assert isinstance(started, EpisodeStarted) and started.policy_version == "scripted:reference"
    assert started.harness_version.startswith("default@sha256:") and started.parent_episode_id is None
    # the backend that ran (the toy one), not the kind the task asked for
    assert (started.backend, started.trust_level, make_task().backend) == ("toy", "exact", "sandbox")
    assert {(e.run_id, e.round, e.task_id, e.episode_id) for e in events} == {
        ("run-1", 2, "task-1", outcome.episode_id)
    }
    assert [e.causation_id for e in events[1:]] == [e.event_id for e in events[:-1]]
    assert isinstance(ended, EpisodeEnded) and ended.reason == "finished" and ended.answer == "hello"
    assert (ended.steps, ended.tool_calls) == (2, 1) and ended.input_tokens > 0 and ended.output_tokens > 0
    assert ended.cost_estimate_usd == pytest.approx((ended.input_tokens + 2 * ended.output_tokens) / 1e6)
    assert ended.final_state is not None
    assert decode_evidence(blobs.get(ended.final_state), blobs).final_state == ["hello"]  # lean v2: initial + delta
    assert backend.notes == ["hello"]
    observation = events[3]
    assert isinstance(observation, ObservationReturned) and observation.result == {"count": 1}
    assert observation.changes[0].path == "/notes/0"
    second = contexts(events, blobs)[1]
    assert second[-1].content.startswith("Observation (step 1):") and '"count":1' in second[-1].content


def test_garbage_outputs_get_feedback_and_the_episode_goes_on() -> None:
    outcome, events, blobs, _ = run(
        ["let me think", '<action>{"kind": "tool_call", "name": "notes.add"', ADD, Finish()]
    )
    assert outcome.reason == "finished" and outcome.steps == 4
    rejected = [e for e in events if isinstance(e, ObservationReturned) and e.error is not None]
    assert [e.error.code for e in rejected] == ["parse_error", "parse_error"]
    assert rejected[0].blob is not None and blobs.get(rejected[0].blob) == b"let me think"
    third = contexts(events, blobs)[2]
    assert "truncated" in third[-1].content and third[-2].content.startswith('<action>{"kind": "tool_call"')


def test_too_many_invalid_outputs_end_the_episode_with_error() -> None:
    config = HarnessConfig(budgets=HarnessBudgets(max_invalid_actions=2))
    outcome, events, _, _ = run(["x", "y", '{"kind":"tool_call","name":"nope"}', ADD], config)
    assert outcome.reason == "error" and outcome.steps == 3
    assert sum(isinstance(e, ActionTaken) for e in events) == 0


def test_step_token_and_tool_call_budgets() -> None:
    assert run([ADD] * 10, HarnessConfig(budgets=HarnessBudgets(max_steps=3)))[0].reason == "budget_exhausted"
    by_tokens, events, _, _ = run([ADD] * 10, budgets=Budgets(max_tokens=2500))
    assert by_tokens.reason == "budget_exhausted" and 1 < by_tokens.steps < 10
    by_calls, events, _, backend = run([ADD] * 10, budgets=Budgets(max_tool_calls=2))
    assert by_calls.reason == "budget_exhausted" and len(backend.notes) == 2
    last = [e for e in events if isinstance(e, ObservationReturned)][-1]
    assert last.error is not None and last.error.code == "budget_exhausted"


def test_memory_is_seeded_recalled_read_and_written() -> None:
    memory = MemoryStore()
    facts = [MemoryFact(content="The user's note style: all lowercase", tags=["style"])]
    script = [MemoryRead(query="note style"), MemoryWrite(content="Wrote hello", tags=["log"]), Finish()]
    outcome, events, blobs, _ = run(script, memory=memory, memories=facts, goal="Add a note in the user's note style")
    assert outcome.reason == "finished"
    assert (
        "# Relevant memories\n- The user's note style: all lowercase [style]" in contexts(events, blobs)[0][1].content
    )
    read = [e for e in events if isinstance(e, ObservationReturned)][0]
    assert read.result == [{"content": "The user's note style: all lowercase", "tags": ["style"]}]
    assert [r.content for r in memory.all()] == ["The user's note style: all lowercase", "Wrote hello"]
    built = [e for e in events if isinstance(e, ContextBuilt)]
    assert built[0].memories_recalled == 1 and built[0].skills_offered == ["note-taking"]


def test_disabled_memory_answers_unavailable() -> None:
    config = HarnessConfig(memory={"enabled": False})  # type: ignore[arg-type]
    _, events, _, _ = run([MemoryRead(query="x"), Finish()], config, memory=MemoryStore())
    observation = [e for e in events if isinstance(e, ObservationReturned)][0]
    assert observation.error is not None and observation.error.code == "unavailable"


def test_skill_load_puts_the_full_text_into_later_contexts() -> None:
    _, events, blobs, _ = run([SkillLoad(name="note-taking"), SkillLoad(name="nope"), Finish()])
    first, second, _ = contexts(events, blobs)
    assert "SKILL BODY" not in first[0].content and "- note-taking: Notes." in first[0].content
    assert "# Loaded skill: note-taking\nSKILL BODY: search first." in second[0].content
    missing = [e for e in events if isinstance(e, ObservationReturned)][1]
    assert missing.error is not None and missing.error.code == "not_found"


def test_a_subagent_runs_a_nested_episode_with_its_tool_subset() -> None:
    spawn = SubagentSpawn(goal="Add the note hello", tools=["notes.add"], max_steps=3)
    script = [spawn, ADD, Finish(answer="added hello"), Finish(answer="done")]
    outcome, events, blobs, backend = run(script)
    assert outcome.reason == "finished" and backend.notes == ["hello"]
    starts = [e for e in events if isinstance(e, EpisodeStarted)]
    parent, child = starts
    assert child.parent_episode_id == parent.episode_id and child.budgets.max_steps == 3
    child_events = [e for e in events if e.episode_id == child.episode_id]
    assert child_events[0].causation_id == next(e.event_id for e in events if isinstance(e, ActionTaken))
    child_context = decode_context(blobs.get(next(e for e in child_events if isinstance(e, ContextBuilt)).context))
    assert "## notes.add" in child_context[0].content and "notes.search" not in child_context[0].content
    assert child_context[1].content.startswith("# Task\nAdd the note hello")
    result = next(e for e in events if isinstance(e, ObservationReturned) and e.episode_id == parent.episode_id)
    assert result.result == {
        "kind": "subagent_result",
        "child_episode_id": child.episode_id,
        "summary": "added hello",
        "success": True,
    }
    ended = [e for e in events if isinstance(e, EpisodeEnded)]
    assert [(e.episode_id, e.final_state is None) for e in ended] == [
        (child.episode_id, True),
        (parent.episode_id, False),
    ]


def test_subagents_cannot_nest_beyond_the_depth_budget_or_widen_tools() -> None:
    inner = SubagentSpawn(goal="deeper", max_steps=2)
    script = [
        SubagentSpawn(goal="g", tools=["mail.send"]),
        SubagentSpawn(goal="sub", max_steps=3),
        inner,
        Finish(),
        Finish(),
    ]
    _, events, _, _ = run(script)
    errors = [e.error.code for e in events if isinstance(e, ObservationReturned) and e.error is not None]
    assert errors == ["invalid_argument", "permission_denied"]


class FailingPolicy:
    name = model = "failing"

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        raise ConnectionError("endpoint down")


def test_a_failing_policy_ends_the_episode_with_error() -> None:
    events, blobs = EventList(), MemoryBlobs()
    harness = Harness(config=HarnessConfig(), policy=FailingPolicy(), blobs=blobs, events=events)
    outcome = run_episode(harness, make_task(), NotesBackend(), RunIds(run_id="r"))
    assert outcome.reason == "error" and events.types()[-1] == "EpisodeEnded"
    assert events[-1].cost_estimate_usd is None  # type: ignore[attr-defined]


def test_a_reference_solver_receives_each_observation() -> None:
    def solver():  # type: ignore[no-untyped-def]
        added = yield ADD
        missing = yield ToolCall(name="notes.search", args={"query": "zzz"})
        yield Finish(answer=f"{added.result['count']} {missing.error.code}")

    outcome, _, _, _ = run(solver())
    assert outcome.answer == "1 not_found"


def test_consolidation_on_end_merges_duplicate_memories() -> None:
    memory = MemoryStore()
    memory.write("Gym on Tuesdays")
    config = HarnessConfig(memory={"consolidate_on_end": True})  # type: ignore[arg-type]
    script = [MemoryWrite(content="gym on tuesdays!"), Finish()]
    run(script, config, memory=memory)
    assert [r.content for r in memory.all()] == ["gym on tuesdays!"]  # rules: the longest of the group


def test_a_config_pinned_to_another_skill_library_is_refused() -> None:
    config = HarnessConfig(skill_library_version="sha256:other")
    with pytest.raises(ValueError, match="expects skill library sha256:other"):
        Harness(config=config, policy=ScriptedPolicy([], "x"), blobs=MemoryBlobs(), events=EventList())


@pytest.mark.parametrize("query", ["NaN", "surrogate"])
def test_an_unrecordable_backend_result_becomes_an_internal_error(query: str) -> None:
    outcome, events, _, _ = run([ToolCall(name="notes.search", args={"query": query}), Finish(answer="ok")])
    observation = next(e for e in events if isinstance(e, ObservationReturned))
    assert observation.error is not None and observation.error.code == "internal" and observation.result is None
    assert outcome.reason == "finished" and all(encode(e) for e in events)


def test_outputs_with_lone_surrogates_are_recorded_not_crashed_on() -> None:
    outcome, events, blobs, _ = run(
        ["\ud800 oops", '<action>{"kind": "finish", "answer": "\ud83d"}</action>', Finish()]
    )
    assert (outcome.reason, outcome.steps, outcome.answer) == ("finished", 2, "?")
    assert contexts(events, blobs)[1][-2].content == "? oops"


def test_large_observations_go_to_a_blob_with_a_preview_inline() -> None:
    big = "x" * 30_000
    script = [
        ToolCall(name="notes.add", args={"text": big}),
        ToolCall(name="notes.search", args={"query": "x"}),
        Finish(),
    ]
    _, events, blobs, _ = run(script)
    search = [e for e in events if isinstance(e, ObservationReturned)][1]
    assert search.flags == ["truncated"] and search.blob is not None and search.changes == []
    assert search.result["truncated"] is True and len(search.result["preview"]) == 1024  # type: ignore[index]
    assert big in blobs.get(search.blob).decode()
    assert all(len(encode(e)) < 64 * 1024 for e in events)
