"""Any OpenAI-compatible chat completions endpoint (a vLLM server, a hosted API): base URL and key from config."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, SecretStr

from harness_service.context.messages import ChatMessage
from harness_service.policy.base import PolicyError, PolicyOutput


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
        body = {
            "model": self.config.model,
            "messages": [m.model_dump() for m in messages],
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        try:
            response = self._client.post("/chat/completions", json=body)
            response.raise_for_status()
            return _parse(response.json())
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise PolicyError(f"{self.config.base_url}: {type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        self._client.close()


def _parse(data: dict[str, Any]) -> PolicyOutput:
    message = data["choices"][0]["message"]
    usage = data.get("usage") or {}
    details = usage.get("completion_tokens_details") or {}
    return PolicyOutput(
        text=message.get("content") or "",
        input_tokens=int(usage.get("prompt_tokens", 0)),
        output_tokens=int(usage.get("completion_tokens", 0)),
        thinking_tokens=int(details.get("reasoning_tokens") or 0),
    )
