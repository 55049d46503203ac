"""The ``Policy`` interface every inference backend implements, and what one call returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from harness_service.context.messages import ChatMessage
from producers.backends.base import Observation


@dataclass(frozen=True)
class PolicyOutput:
    """One completion. ``output_tokens`` counts every generated token; ``thinking_tokens`` is the reasoning part."""

    text: str
    input_tokens: int
    output_tokens: int
    thinking_tokens: int = 0


class PolicyError(RuntimeError):
    """The model could not be called (endpoint down, bad response); the episode ends with ``error``."""


class Policy(Protocol):
    """Picks the next action as text. ``name`` labels every event it produces (e.g. ``scripted:reference``)."""

    name: str
    model: str
    """The price-table key (the served model name)."""

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput: ...


@runtime_checkable
class ObservingPolicy(Protocol):
    """A policy that also wants each observation as data (e.g. a reference solver), besides the context text."""

    def observe(self, observation: Observation) -> None: ...
