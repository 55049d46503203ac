"""The ``Policy`` interface every inference backend implements, and what one call returns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from harness_service.context.messages import ChatMessage
from producers.backends.base import Observation, ToolSpec


@dataclass(frozen=True)
class SampledTokens:
    """What a learned policy conditioned on and sampled: the RL learner's behaviour log-probs.

    ``logprobs[i]`` is log pi(completion_ids[i] | prompt_ids, completion_ids[:i]) under the sampling
    distribution (logits / ``temperature``); the harness stores it with the step (ActionTaken.sampled).
    """

    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    temperature: float

    def to_json(self) -> dict[str, object]:
        return {
            "prompt_ids": list(self.prompt_ids),
            "completion_ids": list(self.completion_ids),
            "logprobs": list(self.logprobs),
            "temperature": self.temperature,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SampledTokens:
        return cls(
            tuple(data["prompt_ids"]),
            tuple(data["completion_ids"]),
            tuple(data["logprobs"]),
            float(data["temperature"]),
        )


@dataclass(frozen=True)
class PolicyOutput:
    """One completion. ``output_tokens`` counts every generated token; ``thinking_tokens`` is the reasoning part."""

    text: str
    input_tokens: int
    output_tokens: int
    thinking_tokens: int = 0
    sampled: SampledTokens | None = None
    """Token ids and behaviour log-probs, from policies that expose them (the learner's planner)."""


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


@runtime_checkable
class ToolCallingPolicy(Protocol):
    """A policy whose model also takes the step's tools as structured function schemas (an OpenAI ``tools``
    field) and may answer with native tool calls; its ``text`` still records every call (``actions.native``)."""

    def generate_with_tools(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> PolicyOutput: ...


StepGenerator = Callable[[Sequence[ChatMessage], Sequence[ToolSpec]], PolicyOutput]


def step_generator(policy: Policy) -> StepGenerator:
    """``generate_step`` bound to one policy: the protocol check (slow for a runtime-checkable protocol) runs once,
    for an episode's every step."""
    if isinstance(policy, ToolCallingPolicy):
        return policy.generate_with_tools
    generate = policy.generate
    return lambda messages, tools: generate(messages)


def generate_step(policy: Policy, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> PolicyOutput:
    """One step's completion: a tool-calling policy also gets the step's tools; every other policy sees them in the
    context text only, exactly as before."""
    return step_generator(policy)(messages, tools)
