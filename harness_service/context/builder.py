"""Builds the context of one step: fixed system + task messages, then the newest history turns that fit the budget."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from harness_service.config import CompactContext
from harness_service.context.feedback import clip
from harness_service.context.history import HistoryTurn, summary_message
from harness_service.context.messages import ChatMessage, render_message, render_messages
from harness_service.context.sections import compact_system_text, system_text, task_text
from harness_service.context.tokens import ApproxTokenCounter, TokenCounter
from harness_service.memory.records import MemoryRecord
from harness_service.skills.skill import Skill
from producers.backends.base import Observation, ToolSpec

SUMMARY_MAX_LINES = 40


@dataclass(frozen=True)
class ContextInputs:
    """Everything a context is a function of."""

    instructions: str
    goal: str
    tools: Sequence[ToolSpec] = ()
    offered_skills: Sequence[Skill] = ()
    loaded_skills: Sequence[Skill] = ()
    memories: Sequence[MemoryRecord] = ()
    first_observation: Observation | None = None
    history: Sequence[HistoryTurn] = ()
    compact: CompactContext | None = None
    """A compact system turn (``tools`` then holds the tools selected for this step, in order)."""


@dataclass(frozen=True)
class BuiltContext:
    """The messages, their rendered text and its token count, and how many turns were summarised."""

    messages: tuple[ChatMessage, ...]
    text: str
    tokens: int
    summarised_turns: int
    over_budget: bool = False


@dataclass
class ContextBuilder:
    """Deterministic: the same inputs always give byte-identical ``text``. Caches token counts per message."""

    budget_tokens: int
    turn_chars: int = 4000
    counter: TokenCounter = field(default_factory=ApproxTokenCounter)
    _counts: dict[ChatMessage, int] = field(default_factory=dict, repr=False)

    def build(self, inputs: ContextInputs) -> BuiltContext:
        fixed = [
            ChatMessage(
                role="system",
                content=system_text(inputs.instructions, inputs.tools, inputs.offered_skills, inputs.loaded_skills)
                if inputs.compact is None
                else compact_system_text(
                    inputs.instructions, inputs.tools, inputs.offered_skills, inputs.loaded_skills, inputs.compact
                ),
            ),
            ChatMessage(
                role="user",
                content=task_text(
                    inputs.goal,
                    inputs.memories,
                    inputs.first_observation,
                    self.turn_chars,
                    "full" if inputs.compact is None else inputs.compact.observations,
                ),
            ),
        ]
        turns = [self._clipped(t) for t in inputs.history]
        turn_costs = [sum(self._count(m) for m in t.messages()) for t in turns]
        fixed_cost = sum(self._count(m) for m in fixed)
        suffix = 0
        suffix_costs = [0] * (len(turns) + 1)
        for i in range(len(turns) - 1, -1, -1):
            suffix += turn_costs[i]
            suffix_costs[i] = suffix
        for start, summary in self._candidates(turns):
            cost = fixed_cost + suffix_costs[start] + (self._count(summary) if summary else 0)
            if cost > self.budget_tokens:
                continue
            messages = self._assemble(fixed, summary, turns[start:])
            text = render_messages(messages)
            tokens = cost if getattr(self.counter, "additive", False) else self.counter.count(text)
            if tokens <= self.budget_tokens:
                return BuiltContext(messages, text, tokens, start)
        messages = tuple(fixed)  # even the fixed part does not fit: it is never cut, the overflow is flagged
        text = render_messages(messages)
        tokens = self.counter.count(text)
        return BuiltContext(messages, text, tokens, len(turns), over_budget=tokens > self.budget_tokens)

    @staticmethod
    def _candidates(turns: Sequence[HistoryTurn]) -> Iterator[tuple[int, ChatMessage | None]]:
        """(first kept turn, summary) from most to least history: one summary line per dropped turn first,
        then a single count line in place of those lines."""
        for max_lines in (SUMMARY_MAX_LINES, 0):
            for start in range(len(turns) + 1):
                yield start, summary_message(turns[:start], max_lines)

    def _assemble(
        self, fixed: list[ChatMessage], summary: ChatMessage | None, kept: Sequence[HistoryTurn]
    ) -> tuple[ChatMessage, ...]:
        messages = list(fixed)
        if summary is not None:
            messages.append(summary)
        for turn in kept:
            messages.extend(turn.messages())
        return tuple(messages)

    def _clipped(self, turn: HistoryTurn) -> HistoryTurn:
        return HistoryTurn(
            turn.step, clip(turn.output, self.turn_chars), clip(turn.feedback, self.turn_chars), turn.summary
        )

    def _count(self, message: ChatMessage) -> int:
        count = self._counts.get(message)
        if count is None:
            count = self._counts[message] = self.counter.count(render_message(message))
        return count
