"""Chat messages, their canonical text rendering and their blob encoding (what ContextBuilt points at)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, TypeAdapter

Role = Literal["system", "user", "assistant"]
CONTEXT_MEDIA_TYPE = "application/vnd.flywheel.context+json"


class ChatMessage(BaseModel):
    """One chat turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: str


_MESSAGES = TypeAdapter(list[ChatMessage])


def turn_start(role: Role) -> str:
    """The ChatML header of a ``role`` turn: a completion model's prompt ends with ``turn_start("assistant")``."""
    return f"<|im_start|>{role}\n"


SYSTEM_START, USER_START, ASSISTANT_START = turn_start("system"), turn_start("user"), turn_start("assistant")
_TURN = re.compile(r"(?=<\|im_start\|>)")


def split_turns(text: str) -> list[str]:
    """ChatML text cut before every ``<|im_start|>``; ``"".join`` of the result is ``text``."""
    return [turn for turn in _TURN.split(text) if turn]


def render_message(message: ChatMessage) -> str:
    """ChatML text of one message; ``render_messages`` is the concatenation of these."""
    return f"{turn_start(message.role)}{message.content}<|im_end|>\n"


def render_messages(messages: Sequence[ChatMessage]) -> str:
    """The exact text a completion model sees (ChatML): the learner re-renders training examples with it."""
    return "".join(render_message(m) for m in messages)


_RENDERED = re.compile(r"<\|im_start\|>(system|user|assistant)\n(.*?)<\|im_end\|>\n", re.DOTALL)


def parse_messages(text: str) -> list[ChatMessage]:
    """Inverse of ``render_messages``: the messages of a ChatML text, for a model that renders them with its own
    chat template (``learner.model.window.PromptWindow.chat_template``). Raises ValueError on anything else."""
    messages = [ChatMessage(role=m[1], content=m[2]) for m in _RENDERED.finditer(text)]
    if render_messages(messages) != text:
        raise ValueError("not a ChatML rendering of chat messages (render_messages output)")
    return messages


def message_json(message: ChatMessage) -> bytes:
    """One message's canonical JSON, as ``encode_context`` writes it."""
    return orjson.dumps(message.model_dump())


def encode_context(messages: Sequence[ChatMessage], encoded: Callable[[ChatMessage], bytes] = message_json) -> bytes:
    """Canonical JSON bytes of the messages: the blob recorded for each context. ``encoded`` may memoise
    ``message_json`` (a context repeats the previous step's messages)."""
    return b'{"format":"chatml","messages":[' + b",".join(map(encoded, messages)) + b"]}"


def decode_context(data: bytes) -> list[ChatMessage]:
    """Inverse of ``encode_context``."""
    return _MESSAGES.validate_python(orjson.loads(data)["messages"])
