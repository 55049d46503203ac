"""Any OpenAI-compatible chat completions endpoint (a vLLM server, a hosted API): base URL and key from config.

The step's tools go in the request's ``tools`` field and a reply's native ``tool_calls`` are recorded as Hermes
``<tool_call>`` text (``actions.native``), so a chat model with its own tool-call format drives the harness too.
A server that refuses ``tools`` (HTTP 400 naming tool choice or a tool-call parser: vLLM without
``--enable-auto-tool-choice``) gets the request again without them, and every later request of this policy goes
without; the context describes the actions either way.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, JsonValue, SecretStr

from harness_service.actions.native import function_tools, render_tool_calls, sent_names
from harness_service.context.messages import ChatMessage
from harness_service.policy.base import PolicyError, PolicyOutput
from producers.backends.base import ToolSpec

log = logging.getLogger("flywheel.policy.openai")
TOOLS_REFUSED_HINTS = ("tool choice", "tool_choice", "tool-call-parser", "tool_call_parser", "auto-tool-choice")
"""Phrases of a 400 that refuses the ``tools`` field (vLLM: '"auto" tool choice requires --enable-auto-tool-choice
and --tool-call-parser to be set')."""


class OpenAIPolicyConfig(BaseModel):
    """Endpoint, model and sampling settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str
    model: str
    api_key: SecretStr | None = None
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout_s: float = 60.0
    retries: int = 2
    native_tools: bool = True
    """Send the step's tools (and the harness's action functions) in the request's ``tools`` field. Off for a
    server that refuses ``tools`` (vLLM without ``--enable-auto-tool-choice``) or a model that knows only the
    ``<action>`` text format, which the context describes either way."""
    safe_function_names: bool = False
    """Send function names as hosted APIs require (``^[a-zA-Z0-9_-]{1,64}$``: ``notes.add`` -> ``notes__add``,
    ``actions.native.safe_function_name``); calls in the reply are mapped back, so the record has the real names."""


class _Function(BaseModel):
    name: str
    arguments: JsonValue = "{}"
    """A JSON string by the OpenAI spec; some servers send the decoded object."""


class _ToolCall(BaseModel):
    function: _Function


class _Message(BaseModel):
    """The reply message: its text and the function calls a server parsed out of the model's output."""

    content: str | None = None
    tool_calls: list[_ToolCall] | None = None

    def text(self, real_names: Mapping[str, str] | None = None) -> str:
        """What the model produced, as text: the content, then every tool call as a Hermes block, its function name
        mapped back through ``real_names`` (sent name -> tool name) where the request renamed it."""
        content = self.content or ""
        if not self.tool_calls:
            return content
        names = real_names or {}
        calls = [(names.get(c.function.name, c.function.name), c.function.arguments) for c in self.tool_calls]
        return render_tool_calls(content, calls)


class OpenAICompatiblePolicy:
    """POSTs ``/chat/completions``; usage (incl. ``reasoning_tokens``) comes from the response. ``name`` labels the
    episodes (the inference port passes the policy version it serves); by default ``openai:<model>``."""

    def __init__(
        self, config: OpenAIPolicyConfig, client: httpx.Client | None = None, *, name: str | None = None
    ) -> None:
        self.config = config
        self.model = config.model
        self.name = name or f"openai:{config.model}"
        self.tools_refused = False
        """Set once the server refused the ``tools`` field; requests go without it from then on."""
        headers = {"Authorization": f"Bearer {config.api_key.get_secret_value()}"} if config.api_key else {}
        self._client = client or httpx.Client(
            base_url=config.base_url.rstrip("/"),
            headers=headers,
            timeout=config.timeout_s,
            transport=httpx.HTTPTransport(retries=config.retries),
        )

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        return self._complete(messages, [], {})

    def generate_with_tools(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> PolicyOutput:
        if not self.config.native_tools or self.tools_refused:
            return self._complete(messages, [], {})
        safe = self.config.safe_function_names
        real_names = {sent: real for real, sent in sent_names(tools, safe_names=safe).items() if sent != real}
        return self._complete(messages, function_tools(tools, safe_names=safe), real_names)

    def _complete(
        self, messages: Sequence[ChatMessage], functions: list[dict[str, Any]], real_names: Mapping[str, str]
    ) -> PolicyOutput:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [m.model_dump() for m in messages],
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        if functions:
            body["tools"] = functions
        try:
            response = self._client.post("/chat/completions", json=body)
            if functions and _refuses_tools(response):
                self._stop_sending_tools(response)
                del body["tools"]
                response = self._client.post("/chat/completions", json=body)
            response.raise_for_status()
            return _parse(response.json(), real_names)
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise PolicyError(f"{self.config.base_url}: {type(exc).__name__}: {exc}") from exc

    def _stop_sending_tools(self, response: httpx.Response) -> None:
        self.tools_refused = True
        log.warning(
            "%s refused the tools field (HTTP %d: %s); sending requests without it from now on (start vLLM with "
            "--enable-auto-tool-choice --tool-call-parser hermes to use native tool calls)",
            self.config.base_url,
            response.status_code,
            response.text[:300],
        )

    def close(self) -> None:
        self._client.close()


def _refuses_tools(response: httpx.Response) -> bool:
    """A 400 whose message says the server cannot take the ``tools`` field (its tool-call parsing is off)."""
    if response.status_code != httpx.codes.BAD_REQUEST:
        return False
    text = response.text.lower()
    return any(hint in text for hint in TOOLS_REFUSED_HINTS)


def _parse(data: dict[str, Any], real_names: Mapping[str, str]) -> PolicyOutput:
    message = _Message.model_validate(data["choices"][0]["message"])
    usage = data.get("usage") or {}
    details = usage.get("completion_tokens_details") or {}
    return PolicyOutput(
        text=message.text(real_names),
        input_tokens=int(usage.get("prompt_tokens", 0)),
        output_tokens=int(usage.get("completion_tokens", 0)),
        thinking_tokens=int(details.get("reasoning_tokens") or 0),
    )
