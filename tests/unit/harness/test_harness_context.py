"""Context construction: deterministic rendering, budgets, summaries of dropped turns, blob round trip."""

from __future__ import annotations

import pytest
from harness_fakes import NOTE_TOOLS
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_service.context.builder import ContextBuilder, ContextInputs
from harness_service.context.history import HistoryTurn
from harness_service.context.messages import (
    ChatMessage,
    Role,
    decode_context,
    encode_context,
    render_message,
    render_messages,
)
from harness_service.context.sections import compact_schema
from harness_service.context.tokens import _PIECE, ApproxTokenCounter, message_tokens
from harness_service.memory.records import MemoryRecord
from harness_service.skills.skill import Skill
from producers.backends.base import Observation

pytestmark = pytest.mark.unit

SKILL = Skill(name="note-taking", tools=["notes.*"], when_to_use="When asked to remember.", body="1. Add the note.")


def inputs(turns: int = 0, output_chars: int = 40) -> ContextInputs:
    history = [
        HistoryTurn(step=i, output="x" * output_chars + f" step {i}", feedback='{"ok":true}', summary=f"call {i} -> ok")
        for i in range(1, turns + 1)
    ]
    return ContextInputs(
        instructions="Be helpful.",
        goal="Add a note.",
        tools=list(reversed(NOTE_TOOLS)),
        offered_skills=[SKILL],
        memories=[MemoryRecord(id=1, content="The user likes short notes.", tags=["style"])],
        first_observation=Observation(result={"goal": "Add a note."}),
        history=history,
    )


def test_same_inputs_render_byte_identical_text() -> None:
    first = ContextBuilder(budget_tokens=4096).build(inputs(5))
    second = ContextBuilder(budget_tokens=4096).build(inputs(5))
    assert first.text.encode() == second.text.encode()
    assert first.text == render_messages(first.messages)
    assert first.tokens == ApproxTokenCounter().count(first.text)


def test_system_message_lists_tools_sorted_skills_and_memories() -> None:
    built = ContextBuilder(budget_tokens=4096).build(inputs())
    system, task = built.messages[0].content, built.messages[1].content
    assert system.index("## notes.add (writes)") < system.index("## notes.search (read-only)")
    assert "- note-taking: When asked to remember." in system
    assert "The user likes short notes. [style]" in task
    assert '<action>{"kind": "finish"' in system


def test_old_turns_are_summarised_to_fit_the_budget() -> None:
    full = ContextBuilder(budget_tokens=100_000).build(inputs(30, output_chars=400))
    assert full.summarised_turns == 0
    budget = full.tokens // 2
    cut = ContextBuilder(budget_tokens=budget).build(inputs(30, output_chars=400))
    assert cut.tokens <= budget
    assert 0 < cut.summarised_turns < 30
    summary = cut.messages[2].content
    assert summary.startswith("# Earlier steps (summarised)") and "- step 1: call 1 -> ok" in summary
    assert cut.messages[-2].content.endswith("step 30")  # the newest turn is always kept first


def test_fixed_part_larger_than_budget_is_flagged_not_cut() -> None:
    built = ContextBuilder(budget_tokens=256).build(inputs(3))
    assert built.over_budget and built.tokens > 256
    assert built.summarised_turns == 3


def test_long_turns_are_clipped_deterministically() -> None:
    built = ContextBuilder(budget_tokens=1_000_000, turn_chars=100).build(inputs(1, output_chars=1_000_000))
    assistant = built.messages[-2].content
    assert len(assistant) < 200 and assistant.endswith("more chars clipped]")


def test_context_blob_round_trips_to_the_same_text() -> None:
    built = ContextBuilder(budget_tokens=4096).build(inputs(2))
    assert render_messages(decode_context(encode_context(built.messages))) == built.text


def test_render_uses_chatml() -> None:
    text = render_messages([ChatMessage(role="user", content="hi")])
    assert text == "<|im_start|>user\nhi<|im_end|>\n"


def test_tool_schemas_lose_titles_but_keep_property_names_and_examples() -> None:
    schema = {
        "title": "NewEvent",
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "at": {"anyOf": [{"title": "X", "type": "string"}]},
        },
        "examples": [{"title": "Coffee"}],
    }
    assert compact_schema(schema) == {
        "type": "object",
        "properties": {"title": {"type": "string"}, "at": {"anyOf": [{"type": "string"}]}},
        "examples": [{"title": "Coffee"}],
    }


@settings(max_examples=150, deadline=None)
@given(
    turns=st.lists(st.tuples(st.text(max_size=300), st.text(max_size=300)), max_size=25),
    budget=st.integers(min_value=900, max_value=6000),
)
def test_any_history_fits_the_budget_whenever_the_fixed_part_does(turns: list[tuple[str, str]], budget: int) -> None:
    history = [HistoryTurn(i + 1, out, feedback, f"turn {i + 1}") for i, (out, feedback) in enumerate(turns)]
    base = inputs()
    fixed = ContextBuilder(budget_tokens=budget).build(base).tokens
    built = ContextBuilder(budget_tokens=budget).build(ContextInputs(**{**base.__dict__, "history": history}))
    again = ContextBuilder(budget_tokens=budget).build(ContextInputs(**{**base.__dict__, "history": history}))
    assert built.text == again.text
    assert built.over_budget == (built.tokens > budget)
    if fixed <= budget:  # the summary shrinks to one line, or goes, so only the fixed part can overflow
        assert built.tokens <= budget


def test_the_summary_collapses_to_one_line_when_its_lines_do_not_fit() -> None:
    many = inputs(30, output_chars=400)
    fixed = ContextBuilder(budget_tokens=100_000).build(inputs()).tokens
    built = ContextBuilder(budget_tokens=fixed + 40).build(many)
    assert built.summarised_turns == 30 and built.tokens <= fixed + 40
    assert built.messages[2].content.endswith("Steps 1-30 omitted to fit the context.")


def test_result_style_observations_drop_changes_and_empty_fields_but_keep_errors() -> None:
    from bus_schemas.actions import StateChange, ToolError
    from harness_service.context.feedback import render_observation

    added = StateChange(path="/notes/n1", op="added", after={"id": "n1", "title": "Milk"})
    done = Observation(result={"id": "n1", "title": "Milk", "pinned": False, "tags": [], "due": None}, changes=[added])
    full = render_observation(done, 4000)
    assert '"changes"' in full and '"pinned":false' in full and '"ok":true' in full
    assert render_observation(done, 4000, "result") == '{"result":{"id":"n1","title":"Milk"}}'
    failed = Observation(error=ToolError(code="not_found", message="no note n9"), flags=["retryable"])
    assert render_observation(failed, 4000, "result") == (
        '{"error":{"code":"not_found","message":"no note n9","retryable":false},"flags":["retryable"]}'
    )
    assert render_observation(Observation(result=[{"a": None}, 0, False]), 4000, "result") == '{"result":[{},0,false]}'
    spawned = {"child_episode_id": "f2302141-0426-5202-a209-4e9d01c43da9", "kind": "subagent_result", "success": True}
    assert render_observation(Observation(result={**spawned, "summary": "Seville"}), 4000, "result") == (
        '{"result":{"kind":"subagent_result","success":true,"summary":"Seville"}}'  # no run-specific id
    )
    assert '"child_episode_id":"f23' in render_observation(Observation(result=spawned), 4000)


@settings(max_examples=500, deadline=None)
@given(
    st.text(alphabet=st.sampled_from('ab_1Zé中٠ \t\n\u00a0\u2003\u200b\x1c\x85{}":,.-<|>'))
    | st.text()
    | st.text(alphabet=st.characters(max_codepoint=127))  # ASCII: counted by bytes.translate, not the regex
)
def test_the_approximate_count_is_one_token_per_piece(text: str) -> None:
    assert ApproxTokenCounter().count(text) == len(_PIECE.findall(text))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["system", "user", "assistant"]), st.text() | st.text(alphabet=st.sampled_from("ab <|>\n_")))
def test_a_message_counts_its_rendering(role: Role, content: str) -> None:
    """The approximate counter counts a message's content and its role's fixed tokens apart: the same total."""
    message = ChatMessage(role=role, content=content)
    assert message_tokens(ApproxTokenCounter(), message) == len(_PIECE.findall(render_message(message)))


def test_str_split_and_the_pieces_agree_on_every_space() -> None:
    counter = ApproxTokenCounter()
    for code in range(0x110000):
        text = f"a{chr(code)}bb"
        assert counter.count(text) == len(_PIECE.findall(text)), hex(code)
