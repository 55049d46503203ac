"""Action parsing: every kind round-trips; garbage of any shape becomes structured feedback, never an exception."""

from __future__ import annotations

import json

import pytest
from harness_fakes import NOTE_TOOLS
from hypothesis import given, settings
from hypothesis import strategies as st

from bus_schemas.actions import (
    Clarify,
    Finish,
    MemoryRead,
    MemoryWrite,
    Refuse,
    SkillLoad,
    SubagentSpawn,
    ToolCall,
    ToolError,
)
from harness_service.actions.format import render_action
from harness_service.actions.parser import ActionParser

pytestmark = pytest.mark.unit

PARSER = ActionParser(NOTE_TOOLS)
ACTIONS = [
    ToolCall(name="notes.add", args={"text": "hello"}),
    ToolCall(name="notes.search", args={"query": "he", "limit": 3}),
    MemoryRead(query="birthday", top_k=3),
    MemoryWrite(content="Alex prefers mornings", tags=["preference"]),
    SkillLoad(name="note-taking"),
    SubagentSpawn(goal="find the note", tools=["notes.search"], max_steps=4),
    Clarify(question="Which note?"),
    Refuse(reason="unsafe"),
    Finish(answer="done"),
]


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.kind)
def test_every_action_kind_round_trips(action: object) -> None:
    text = render_action(action)  # type: ignore[arg-type]
    assert PARSER.parse(text) == action
    assert PARSER.parse(f"I will act now.\n{text}\n") == action


def test_the_canonical_text_decides_the_action_then_the_tool_then_the_arguments() -> None:
    """Fields in the documented order (kind, then the action's own fields), a tool call's arguments by name."""
    call = ToolCall(name="clock.set_alarm", args={"time": "20:35", "label": "Stretch"})
    assert render_action(call) == (
        '<action>{"kind":"tool_call","name":"clock.set_alarm","args":{"label":"Stretch","time":"20:35"}}</action>'
    )
    spawn = SubagentSpawn(goal="g", tools=["a.b"], max_steps=4)
    assert render_action(spawn) == '<action>{"kind":"subagent_spawn","goal":"g","tools":["a.b"],"max_steps":4}</action>'
    assert render_action(Finish(answer="x")) == '<action>{"kind":"finish","answer":"x"}</action>'


def test_plain_json_and_fenced_json_are_accepted() -> None:
    assert PARSER.parse('{"kind": "finish", "answer": "x"}') == Finish(answer="x")
    assert PARSER.parse('Answer:\n```json\n{"kind": "finish", "answer": "y"}\n```') == Finish(answer="y")
    assert PARSER.parse('{"name": "notes.add", "args": {"text": "z"}}') == ToolCall(
        name="notes.add", args={"text": "z"}
    )


def error_of(text: str) -> ToolError:
    result = PARSER.parse(text)
    assert isinstance(result, ToolError), result
    assert result.retryable and 0 < len(result.message) <= 4096
    return result


def test_random_text_is_a_parse_error_with_the_format_hint() -> None:
    error = error_of("I think I should probably look at the notes first.")
    assert error.code == "parse_error" and "<action>" in error.message


def test_truncated_json_says_it_looks_truncated() -> None:
    error = error_of('<action>{"kind": "tool_call", "name": "notes.add", "args": {"te')
    assert error.code == "parse_error" and "truncated" in error.message


def test_unknown_tool_names_the_closest_tools() -> None:
    error = error_of('<action>{"kind": "tool_call", "name": "notes.ad", "args": {}}</action>')
    assert error.code == "unknown_tool" and "Did you mean: notes.add" in error.message


def test_wrong_argument_types_name_the_argument() -> None:
    error = error_of('<action>{"kind":"tool_call","name":"notes.search","args":{"query":"a","limit":"3"}}</action>')
    assert error.code == "invalid_argument" and "args['limit']" in error.message and "integer" in error.message
    missing = error_of('<action>{"kind":"tool_call","name":"notes.add","args":{}}</action>')
    assert "'text' is a required property" in missing.message


def test_invalid_fields_of_other_kinds_are_parse_errors() -> None:
    error = error_of('<action>{"kind":"memory_read","query":"x","top_k":"many"}</action>')
    assert error.code == "parse_error" and "top_k" in error.message
    assert "unknown action kind" in error_of('<action>{"kind":"dance"}</action>').message.lower()
    harness_only = '{"kind":"subagent_result","child_episode_id":"c","summary":"s","success":true}'
    assert error_of(harness_only).code == "parse_error"  # written by the harness, never by the model


def test_one_megabyte_outputs_are_rejected_before_parsing() -> None:
    error = error_of("<action>" + "a" * 1_000_000)
    assert error.code == "parse_error" and "1000008 characters" in error.message


def test_actions_too_large_for_an_event_are_rejected() -> None:
    error = error_of('<action>{"kind": "finish", "answer": "' + "é" * 20_000 + '"}</action>')
    assert error.code == "parse_error" and "40032 bytes; the limit is 32768" in error.message


def test_a_megabyte_argument_within_the_limit_is_reported_briefly() -> None:
    parser = ActionParser(NOTE_TOOLS, max_chars=2_000_000, max_action_bytes=2_000_000)
    huge = "9" * 1_000_000
    text = '<action>{"kind":"tool_call","name":"notes.search","args":{"query":"q","limit":"' + huge + '"}}</action>'
    result = parser.parse(text)
    assert isinstance(result, ToolError) and result.code == "invalid_argument" and len(result.message) < 1000


def test_deeply_nested_json_is_a_parse_error() -> None:
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    parser = ActionParser(NOTE_TOOLS, max_chars=10_000_000, max_action_bytes=10_000_000)
    assert isinstance(parser.parse(f"<action>{deep}</action>"), ToolError)
    nested_args = '{"kind":"tool_call","name":"notes.add","args":{"text":' + "[" * 5000 + "]" * 5000 + "}}"
    assert isinstance(parser.parse(nested_args), ToolError)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300).map(lambda b: b.decode("latin-1"))))
def test_arbitrary_text_never_raises(text: str) -> None:
    for candidate in (text, f"<action>{text}</action>", f"<action>{{{text}"):
        assert isinstance(PARSER.parse(candidate), (ToolError, *{type(a) for a in ACTIONS}))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["kind", "name", "args", "query", "goal", "tools", "top_k"]), json_values))
def test_arbitrary_json_objects_never_raise(data: dict) -> None:
    result = PARSER.parse("<action>" + json.dumps(data) + "</action>")
    assert result is not None
