"""Native tool calls: the step's tools go in the OpenAI ``tools`` field, and native ``tool_calls`` or Hermes
``<tool_call>`` text become the harness's actions, recorded as text that replays to the same action."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest
from harness_fakes import NOTE_TOOLS, EventList, MemoryBlobs, NotesBackend, make_task

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
from bus_schemas.events.episodes import ActionRejected, ActionTaken, ContextBuilt
from harness_service.actions.format import ACTION_FORMAT_DOC, render_action
from harness_service.actions.native import (
    ACTION_FUNCTIONS,
    NATIVE_FORMAT_DOC,
    function_tools,
    render_native_action,
    render_tool_calls,
)
from harness_service.actions.parser import ActionParser
from harness_service.config import ActionSyntax, CompactContext, HarnessConfig
from harness_service.context.messages import ChatMessage
from harness_service.http.streaming import CancellablePolicy, ClientGone
from harness_service.policy.base import ToolCallingPolicy, generate_step
from harness_service.policy.openai_http import OpenAICompatiblePolicy, OpenAIPolicyConfig
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import Harness, RunIds, run_episode
from producers.backends.base import ToolSpec

pytestmark = pytest.mark.unit

PARSER = ActionParser(NOTE_TOOLS)
USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "completion_tokens_details": {"reasoning_tokens": 5}}
NON_TOOL_ACTIONS = [
    MemoryRead(query="birthday", top_k=3),
    MemoryWrite(content="Alex prefers mornings", tags=["preference"]),
    SkillLoad(name="note-taking"),
    SubagentSpawn(goal="find the note", tools=["notes.search"], max_steps=4),
    Clarify(question="Which note?"),
    Refuse(reason="unsafe"),
    Finish(answer="done"),
]


def call(name: str, arguments: Any) -> dict[str, Any]:
    """One entry of a reply's ``tool_calls`` as an OpenAI-compatible server sends it."""
    return {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": arguments}}


class FakeServer:
    """The server side of ``/chat/completions`` behind ``httpx.MockTransport``: canned messages in order."""

    def __init__(self, *messages: dict[str, Any]) -> None:
        self.messages = list(messages)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/chat/completions"
        self.requests.append(json.loads(request.content))
        message = self.messages[min(len(self.requests), len(self.messages)) - 1]
        return httpx.Response(200, json={"choices": [{"message": {"role": "assistant", **message}}], "usage": USAGE})

    def policy(self, **config: Any) -> OpenAICompatiblePolicy:
        client = httpx.Client(base_url="http://model.test/v1", transport=httpx.MockTransport(self))
        return OpenAICompatiblePolicy(OpenAIPolicyConfig(base_url="http://model.test/v1", model="m", **config), client)

    def tool_names(self, request: int = 0) -> list[str]:
        return [tool["function"]["name"] for tool in self.requests[request].get("tools", [])]


def run(policy: Any, config: HarnessConfig | None = None) -> tuple[EventList, MemoryBlobs, NotesBackend, str]:
    events, blobs, backend = EventList(), MemoryBlobs(), NotesBackend()
    harness = Harness(config=config or HarnessConfig(), policy=policy, blobs=blobs, events=events)
    outcome = run_episode(harness, make_task(), backend, RunIds(run_id="r"))
    return events, blobs, backend, outcome.reason


def test_the_request_offers_the_step_tools_then_the_action_functions() -> None:
    server = FakeServer({"content": render_action(Finish(answer="hello"))})
    run(server.policy())
    tools = server.requests[0]["tools"]
    assert server.tool_names() == ["notes.add", "notes.search", *ACTION_FUNCTIONS]
    assert all(tool["type"] == "function" for tool in tools)
    add = tools[0]["function"]
    assert (add["description"], add["parameters"]) == (NOTE_TOOLS[0].description, NOTE_TOOLS[0].parameters)
    finish = tools[2]["function"]["parameters"]
    assert finish["properties"] == {"answer": {"default": "", "maxLength": 16384, "type": "string"}}
    spawn = tools[2 + list(ACTION_FUNCTIONS).index("subagent_spawn")]["function"]["parameters"]
    assert spawn["required"] == ["goal"] and set(spawn["properties"]) == {"goal", "tools", "max_steps"}


def test_a_compact_harness_offers_only_the_tools_it_selected_for_the_step() -> None:
    server = FakeServer({"content": render_action(Finish(answer="hello"))})
    run(server.policy(), HarnessConfig(compact=CompactContext(tool_top_k=1)))
    assert server.tool_names() == ["notes.add", *ACTION_FUNCTIONS]


def test_native_tools_off_sends_no_tools_field() -> None:
    server = FakeServer({"content": render_action(Finish(answer="hello"))})
    _, _, _, reason = run(server.policy(native_tools=False))
    assert reason == "finished" and "tools" not in server.requests[0]


def test_native_tool_calls_drive_an_episode_recorded_as_hermes_text_that_replays() -> None:
    server = FakeServer(
        {"content": None, "tool_calls": [call("notes.add", '{"text": "hello"}')]},
        {"content": "All done.", "tool_calls": [call("finish", '{"answer": "hello"}')]},
    )
    events, blobs, backend, reason = run(server.policy())
    assert reason == "finished" and backend.notes == ["hello"]
    taken = [e for e in events if isinstance(e, ActionTaken)]
    assert [e.action for e in taken] == [ToolCall(name="notes.add", args={"text": "hello"}), Finish(answer="hello")]
    recorded = [blobs.get(e.raw_output).decode() for e in taken]
    assert recorded == [
        '<tool_call>\n{"name": "notes.add", "arguments": {"text": "hello"}}\n</tool_call>',
        'All done.\n<tool_call>\n{"name": "finish", "arguments": {"answer": "hello"}}\n</tool_call>',
    ]
    assert [PARSER.parse(text) for text in recorded] == [e.action for e in taken]  # a replay parses the same
    assert [(e.input_tokens, e.output_tokens, e.thinking_tokens) for e in taken] == [(100, 20, 5)] * 2
    assert server.requests[1]["messages"][-2] == {"role": "assistant", "content": recorded[0]}


def test_of_several_tool_calls_the_first_is_taken_and_all_are_recorded() -> None:
    server = FakeServer(
        {"tool_calls": [call("notes.add", '{"text": "one"}'), call("notes.add", '{"text": "two"}')]},
        {"tool_calls": [call("finish", "{}")]},
    )
    events, blobs, backend, _ = run(server.policy())
    assert backend.notes == ["one"]
    first = next(e for e in events if isinstance(e, ActionTaken))
    assert blobs.get(first.raw_output).decode().count("<tool_call>") == 2


def test_malformed_arguments_are_rejected_with_a_parse_error_and_recorded_verbatim() -> None:
    server = FakeServer(
        {"tool_calls": [call("notes.add", '{"text": "hel')]},
        {"tool_calls": [call("finish", '{"answer": "hello"}')]},
    )
    events, blobs, backend, reason = run(server.policy())
    assert reason == "finished" and backend.notes == []
    rejected = next(e for e in events if isinstance(e, ActionRejected))
    assert rejected.error.code == "parse_error"
    assert rejected.error.message.startswith("The argument string of 'notes.add' is not valid JSON (")
    assert '"arguments": "{\\"text\\": \\"hel"' in blobs.get(rejected.raw_output).decode()


def test_arguments_a_server_already_decoded_are_accepted() -> None:
    text = render_tool_calls("", [("notes.add", {"text": "é"})])
    assert text == '<tool_call>\n{"name": "notes.add", "arguments": {"text": "é"}}\n</tool_call>'
    assert PARSER.parse(text) == ToolCall(name="notes.add", args={"text": "é"})


def test_a_server_reply_without_a_function_name_is_a_policy_error() -> None:
    server = FakeServer({"tool_calls": [{"id": "x", "type": "function", "function": {"arguments": "{}"}}]})
    events, _, _, reason = run(server.policy())
    assert reason == "error" and len(server.requests) == 1
    assert not any(isinstance(e, ActionTaken | ActionRejected) for e in events)


@pytest.mark.parametrize("action", NON_TOOL_ACTIONS, ids=lambda a: a.kind)
def test_every_action_function_becomes_its_action(action: Any) -> None:
    fields = action.model_dump(mode="json")
    name = fields.pop("kind")
    assert PARSER.parse(render_tool_calls("", [(name, json.dumps(fields))])) == action
    hermes = f"<tool_call>\n{json.dumps({'name': name, 'arguments': fields})}\n</tool_call>"
    assert PARSER.parse(f"Let me act.\n{hermes}") == action


def test_hermes_text_from_a_server_that_does_not_parse_tool_calls() -> None:
    text = 'I will add it.\n<tool_call>\n{"name": "notes.add", "arguments": {"text": "x"}}\n</tool_call>'
    assert PARSER.parse(text) == ToolCall(name="notes.add", args={"text": "x"})
    second = text + '\n<tool_call>\n{"name": "finish", "arguments": {}}\n</tool_call>'
    assert PARSER.parse(second) == ToolCall(name="notes.add", args={"text": "x"})


def error_of(text: str, parser: ActionParser = PARSER) -> ToolError:
    result = parser.parse(text)
    assert isinstance(result, ToolError), result
    return result


def test_an_unknown_function_is_the_unknown_tool_error() -> None:
    error = error_of('<tool_call>{"name": "notes.ad", "arguments": {"text": "x"}}</tool_call>')
    assert error.code == "unknown_tool" and "Did you mean: notes.add" in error.message


def test_bad_function_arguments_are_clear_errors() -> None:
    not_object = error_of(render_tool_calls("", [("notes.add", "[1, 2]")]))
    assert not_object.code == "parse_error" and "must be a JSON object, got list" in not_object.message
    invalid = error_of('<tool_call>{"name": "notes.add", "arguments": {"text": ""}}</tool_call>')
    assert invalid.code == "invalid_argument" and "args['text']" in invalid.message
    extra = error_of('<tool_call>{"name": "finish", "arguments": {"answer": "a", "why": "b"}}</tool_call>')
    assert extra.code == "parse_error" and extra.message.startswith("Invalid finish action: why:")
    cut = error_of('<tool_call>\n{"name": "notes.add", "arguments": {"text": "hel')
    assert "The closing </tool_call> is missing" in cut.message


def test_deep_string_arguments_are_refused_before_they_reach_an_event() -> None:
    deep = "[" * 200 + "]" * 200
    error = error_of(render_tool_calls("", [("notes.add", '{"text": ' + deep + "}")]))
    assert error.code == "parse_error" and "nests deeper than" in error.message


def test_the_action_format_wins_over_a_tool_call_in_the_same_text() -> None:
    text = '<tool_call>{"name": "notes.add", "arguments": {"text": "x"}}</tool_call>\n' + render_action(Finish())
    assert PARSER.parse(text) == Finish()


def test_a_backend_tool_named_like_an_action_function_is_the_tool() -> None:
    finish_tool = ToolSpec(name="finish", description="Finish a drawing.", parameters={"type": "object"})
    names = [tool["function"]["name"] for tool in function_tools([finish_tool])]
    assert names.count("finish") == 1 and names[0] == "finish"
    parsed = ActionParser([finish_tool]).parse('<tool_call>{"name": "finish", "arguments": {}}</tool_call>')
    assert parsed == ToolCall(name="finish", args={})


def test_only_tool_calling_policies_get_the_tools_and_a_cancelled_wrapper_still_refuses() -> None:
    scripted = ScriptedPolicy([Finish(answer="a")], "s")
    assert not isinstance(scripted, ToolCallingPolicy)
    messages = [ChatMessage(role="user", content="hi")]
    assert generate_step(scripted, messages, NOTE_TOOLS).text == render_action(Finish(answer="a"))
    server = FakeServer({"content": "ok"})
    cancelled = threading.Event()
    wrapped = CancellablePolicy(server.policy(), cancelled)
    assert generate_step(wrapped, messages, NOTE_TOOLS).text == "ok"
    assert server.tool_names() == ["notes.add", "notes.search", *ACTION_FUNCTIONS]
    cancelled.set()
    with pytest.raises(ClientGone):
        generate_step(wrapped, messages, NOTE_TOOLS)


@pytest.mark.parametrize(
    "action", [ToolCall(name="notes.search", args={"query": "hi", "limit": 2}), *NON_TOOL_ACTIONS], ids=lambda a: a.kind
)
def test_an_action_written_as_a_native_call_parses_back_to_itself(action: Any) -> None:
    text = render_native_action(action)
    assert text.startswith("<tool_call>\n{") and text.endswith("}\n</tool_call>") and "<action>" not in text
    assert PARSER.parse(text) == action
    if isinstance(action, ToolCall):  # arguments sorted by name, as the documented format writes them
        assert '"arguments": {"limit": 2, "query": "hi"}' in text


def test_a_tool_call_harness_documents_native_calls_and_its_scripted_demonstrations_write_them() -> None:
    """``action_syntax="tool_call"`` (what ``--base-model`` uses): the system turn documents function calls and a
    scripted policy (the reference solver's demonstrations) writes the Hermes text Qwen's template writes; the
    default harness, running the same script, keeps the documented ``<action>`` format."""
    script = [ToolCall(name="notes.add", args={"text": "hello"}), Finish(answer="hello")]
    recorded: dict[str, tuple[list[str], str]] = {}
    syntaxes: tuple[ActionSyntax, ...] = ("action", "tool_call")
    for syntax in syntaxes:
        events, blobs, backend, reason = run(ScriptedPolicy(script, "demo"), HarnessConfig(action_syntax=syntax))
        assert reason == "finished" and backend.notes == ["hello"]
        taken = [e for e in events if isinstance(e, ActionTaken)]
        assert [e.action for e in taken] == script
        context = json.loads(blobs.get(next(e for e in events if isinstance(e, ContextBuilt)).context))
        recorded[syntax] = ([blobs.get(e.raw_output).decode() for e in taken], context["messages"][0]["content"])
    native, native_system = recorded["tool_call"]
    assert native == [render_native_action(a) for a in script]
    assert native[0] == '<tool_call>\n{"name": "notes.add", "arguments": {"text": "hello"}}\n</tool_call>'
    assert NATIVE_FORMAT_DOC in native_system and "<action>" not in native_system
    documented, system = recorded["action"]
    assert documented == [render_action(a) for a in script] and ACTION_FORMAT_DOC in system
    compact = HarnessConfig(compact=CompactContext(), action_syntax="tool_call")
    events, _, _, reason = run(ScriptedPolicy(script, "demo"), compact)
    assert reason == "finished"
