"""The inference port's URLs (``--inference`` / ``FLYWHEEL_INFERENCE``), function names hosted APIs accept, and the
fallback for a server that refuses the ``tools`` field."""

from __future__ import annotations

import importlib.util
import json
import logging
from typing import Any

import httpx
import pytest
from harness_fakes import NOTE_TOOLS
from pydantic import SecretStr

from harness_service.actions.native import (
    ACTION_FUNCTIONS,
    SAFE_NAME,
    function_tools,
    safe_function_name,
    sent_names,
)
from harness_service.context.messages import ChatMessage
from harness_service.policy.inference import (
    Inference,
    InferenceUnavailable,
    UnsupportedInference,
    parse_inference,
)
from harness_service.policy.openai_http import OpenAICompatiblePolicy, OpenAIPolicyConfig
from infra.config import ConfigError, load_settings
from producers.backends.base import ToolSpec

pytestmark = pytest.mark.unit

USAGE = {"prompt_tokens": 7, "completion_tokens": 3}
MESSAGES = [ChatMessage(role="user", content="add a note")]


def test_local_is_the_default_and_takes_a_device() -> None:
    assert load_settings().inference_port() == Inference("local", "local:")
    assert parse_inference("local:?device=cuda:1").device == "cuda:1"
    assert parse_inference("local:?device=cpu").resolved_device() == "cpu"


def test_openai_urls_give_the_server_base_url_model_and_options() -> None:
    plain = parse_inference("openai+http://127.0.0.1:8000/v1")
    assert (plain.engine, plain.base_url, plain.served_model, plain.safe_names) == (
        "openai",
        "http://127.0.0.1:8000/v1",
        None,
        False,
    )
    hosted = parse_inference("openai+https://api.example.com/v1?model=gpt-x&safe_names=1&native_tools=0")
    assert hosted.base_url == "https://api.example.com/v1" and hosted.serves_remotely
    assert (hosted.served_model, hosted.safe_names, hosted.native_tools) == ("gpt-x", True, False)
    assert plain.served_policy("planner/1", "planner/1").config.max_tokens == 1024  # the client's default cap
    capped = parse_inference("openai+http://127.0.0.1:8000/v1?max_tokens=64").served_policy("planner/1", "planner/1")
    assert capped.config.max_tokens == 64  # a learner checkpoint's window decodes 64 in process


def test_vllm_is_the_offline_engine() -> None:
    vllm = parse_inference("vllm:")
    assert vllm.engine == "vllm" and not vllm.serves_remotely


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ollama://127.0.0.1:11434", "supported: local:..., openai+http://..., openai+https://..., vllm:..."),
        ("http://127.0.0.1:8000/v1", "unsupported inference URL"),
        ("openai+http:///v1", "has no host"),
        ("openai+http://h:1/v1?modle=x", "?modle: Extra inputs are not permitted"),
        ("local:?device=tpu", "?device: String should match pattern"),
        ("local:/ckpt", "takes no path"),
        ("vllm:?gpu=1", "known: none"),
        ("openai+http://h:1/v1?max_tokens=0", "?max_tokens: Input should be greater than or equal to 1"),
    ],
)
def test_bad_inference_urls_are_refused_naming_the_problem(url: str, says: str) -> None:
    with pytest.raises(UnsupportedInference, match="inference URL") as exc:
        parse_inference(url)
    assert says in str(exc.value)


def test_settings_refuse_an_unknown_scheme_at_load(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"inference: .*unsupported inference URL 'grpc://x'"):
        load_settings(inference="grpc://x")
    monkeypatch.setenv("FLYWHEEL_INFERENCE", "mystery:")
    with pytest.raises(ConfigError, match="unsupported inference URL 'mystery:'"):
        load_settings()


def test_settings_read_the_url_and_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLYWHEEL_INFERENCE", "openai+http://10.0.0.5:8000/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fallback")
    port = load_settings().inference_port()
    assert port.base_url == "http://10.0.0.5:8000/v1"
    assert port.api_key is not None and port.api_key.get_secret_value() == "sk-fallback"
    monkeypatch.setenv("FLYWHEEL_INFERENCE_API_KEY", "sk-flywheel")  # ours wins over OpenAI's variable
    port = load_settings().inference_port()
    assert port.api_key is not None and port.api_key.get_secret_value() == "sk-flywheel"
    assert load_settings(inference="local:").inference_port().engine == "local"  # a flag beats the variable


def test_a_served_policy_is_named_by_its_version_and_asks_for_it_by_name() -> None:
    port = parse_inference("openai+http://h:1/v1", api_key=SecretStr("k"))
    policy = port.served_policy("planner/3", "planner/3")
    assert (policy.name, policy.model, policy.config.base_url) == ("planner/3", "planner/3", "http://h:1/v1")
    assert policy.config.api_key == SecretStr("k")
    renamed = parse_inference("openai+http://h:1/v1?model=qwen3&safe_names=true").served_policy(
        "planner/3", "planner/3"
    )
    assert (renamed.name, renamed.model, renamed.config.safe_function_names) == ("planner/3", "qwen3", True)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_vllm_without_vllm_fails_with_the_fix() -> None:
    with pytest.raises(InferenceUnavailable, match="needs the vllm package"):
        parse_inference("vllm:").check_available()
    parse_inference("local:").check_available()  # nothing to check in process


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("notes.add", "notes__add"),
        ("contacts.update_phone", "contacts__update_phone"),
        ("finish", "finish"),
        ("a b/c", "a-20b-2Fc"),
    ],
)
def test_safe_function_names_match_what_hosted_apis_accept(name: str, safe: str) -> None:
    assert safe_function_name(name) == safe and SAFE_NAME.match(safe)


def test_long_and_colliding_names_stay_unique_and_round_trip() -> None:
    long = "x." * 40
    tools = [ToolSpec(name=n, description="", parameters={"type": "object"}) for n in ("a.b", "a__b", long)]
    table = sent_names(tools, safe_names=True)
    assert all(SAFE_NAME.match(sent) for sent in table.values())
    assert len(set(table.values())) == len(table) == 3 + len(ACTION_FUNCTIONS)
    assert {sent: real for real, sent in table.items()}[table[long]] == long
    assert sent_names(tools) == {name: name for name in table}  # off by default: names as they are


def test_safe_names_are_sent_and_a_reply_is_recorded_under_the_real_name() -> None:
    seen: list[dict[str, Any]] = []

    def server(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        sent = seen[-1]["tools"][0]["function"]["name"]
        call = {"id": "c1", "type": "function", "function": {"name": sent, "arguments": '{"text": "hi"}'}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return httpx.Response(200, json={"choices": [{"message": message}], "usage": USAGE})

    policy = _policy(server, safe_function_names=True)
    out = policy.generate_with_tools(MESSAGES, NOTE_TOOLS)
    names = [tool["function"]["name"] for tool in seen[0]["tools"]]
    assert names == ["notes__add", "notes__search", *ACTION_FUNCTIONS]
    assert out.text == '<tool_call>\n{"name": "notes.add", "arguments": {"text": "hi"}}\n</tool_call>'
    assert function_tools(NOTE_TOOLS)[0]["function"]["name"] == "notes.add"


def _policy(handler: Any, **config: Any) -> OpenAICompatiblePolicy:
    client = httpx.Client(base_url="http://model.test/v1", transport=httpx.MockTransport(handler))
    return OpenAICompatiblePolicy(OpenAIPolicyConfig(base_url="http://model.test/v1", model="m", **config), client)


VLLM_REFUSAL = {
    "object": "error",
    "message": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
    "type": "BadRequestError",
    "code": 400,
}


def test_a_server_refusing_tools_is_asked_again_without_them_for_the_policys_lifetime(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[dict[str, Any]] = []

    def server(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        if "tools" in seen[-1]:
            return httpx.Response(400, json=VLLM_REFUSAL)
        message = {"role": "assistant", "content": "<action>{}</action>"}
        return httpx.Response(200, json={"choices": [{"message": message}], "usage": USAGE})

    policy = _policy(server)
    with caplog.at_level(logging.WARNING, logger="flywheel.policy.openai"):
        first = policy.generate_with_tools(MESSAGES, NOTE_TOOLS)
        second = policy.generate_with_tools(MESSAGES, NOTE_TOOLS)
    assert [("tools" in body) for body in seen] == [True, False, False]  # one retry, then never again
    assert (first.text, first.input_tokens, second.output_tokens) == ("<action>{}</action>", 7, 3)
    assert policy.tools_refused
    warnings = [r for r in caplog.records if "refused the tools field" in r.getMessage()]
    assert len(warnings) == 1


def test_other_400s_are_policy_errors_and_keep_the_tools() -> None:
    from harness_service.policy.base import PolicyError

    seen: list[dict[str, Any]] = []

    def server(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(400, json={"message": "maximum context length is 4096 tokens"})

    policy = _policy(server)
    with pytest.raises(PolicyError, match="400"):
        policy.generate_with_tools(MESSAGES, NOTE_TOOLS)
    assert len(seen) == 1 and not policy.tools_refused
