"""Any OpenAI-compatible chat completions endpoint (a vLLM server, a hosted API): base URL and key from config.

The step's tools go in the request's ``tools`` field and a reply's native ``tool_calls`` are recorded as Hermes
``<tool_call>`` text (``actions.native``), so a chat model with its own tool-call format drives the harness too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, JsonValue, SecretStr

from harness_service.actions.native import function_tools, render_tool_calls
from harness_service.context.messages import ChatMessage
from harness_service.policy.base import PolicyError, PolicyOutput
from producers.backends.base import ToolSpec


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

    def text(self) -> str:
        """What the model produced, as text: the content, then every tool call as a Hermes block."""
        content = self.content or ""
        if not self.tool_calls:
            return content
        return render_tool_calls(content, [(call.function.name, call.function.arguments) for call in self.tool_calls])


class OpenAICompatiblePolicy:
    """POSTs ``/chat/completions``; usage (incl. ``reasoning_tokens``) comes from the response."""

    def __init__(self, config: OpenAIPolicyConfig, client: httpx.Client | None = None) -> None:
        self.config = config
        self.model = config.model
        self.name = f"openai:{config.model}"
        headers = {"Authorization": f"Bearer {config.api_key.get_secret_value()}"} if config.api_key else {}
        self._client = client or httpx.Client(
            base_url=config.base_url.rstrip("/"),
            headers=headers,
            timeout=config.timeout_s,
            transport=httpx.HTTPTransport(retries=config.retries),
        )

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        return self._complete(messages, [])

    def generate_with_tools(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> PolicyOutput:
        return self._complete(messages, function_tools(tools) if self.config.native_tools else [])

    def _complete(self, messages: Sequence[ChatMessage], functions: list[dict[str, Any]]) -> PolicyOutput:
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
            response.raise_for_status()
            return _parse(response.json())
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise PolicyError(f"{self.config.base_url}: {type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        self._client.close()


def _parse(data: dict[str, Any]) -> PolicyOutput:
    message = _Message.model_validate(data["choices"][0]["message"])
    usage = data.get("usage") or {}
    details = usage.get("completion_tokens_details") or {}
    return PolicyOutput(
        text=message.text(),
        input_tokens=int(usage.get("prompt_tokens", 0)),
        output_tokens=int(usage.get("completion_tokens", 0)),
        thinking_tokens=int(details.get("reasoning_tokens") or 0),
    )
