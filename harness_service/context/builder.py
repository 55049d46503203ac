"""Builds the context of one step: fixed system + task messages, then the newest history turns that fit the budget."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial

from harness_service.config import ActionSyntax, CompactContext
from harness_service.context.feedback import clip
from harness_service.context.history import HistoryTurn, summary_message
from harness_service.context.messages import ChatMessage, encode_context, message_json, render_messages
from harness_service.context.sections import compact_system_text, system_text, task_text
from harness_service.context.tokens import ApproxTokenCounter, TokenCounter, message_tokens
from harness_service.identity_cache import IdentityCache
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
    action_syntax: ActionSyntax = "action"
    """The action format the system turn documents (``HarnessConfig.action_syntax``)."""


@dataclass(frozen=True)
class BuiltContext:
    """The messages, their token count, and how many turns were summarised; ``text`` renders them."""

    messages: tuple[ChatMessage, ...]
    tokens: int
    summarised_turns: int
    over_budget: bool = False

    @cached_property
    def text(self) -> str:
        """The rendered messages (``render_messages``): what the policy sees."""
        return render_messages(self.messages)


@dataclass(frozen=True)
class _Turn:
    """A history turn clipped to the builder's ``turn_chars``, its two messages and their tokens."""

    turn: HistoryTurn
    messages: tuple[ChatMessage, ChatMessage]
    tokens: int


@dataclass
class ContextBuilder:
    """Deterministic: the same inputs always give byte-identical ``text``. An episode's builder renders its fixed
    messages again only when their inputs change, and each history turn once."""

    budget_tokens: int
    turn_chars: int = 4000
    counter: TokenCounter = field(default_factory=ApproxTokenCounter)
    _turns: dict[HistoryTurn, _Turn] = field(default_factory=dict, repr=False)
    _system: tuple[tuple[object, ...], ChatMessage] | None = field(default=None, repr=False)
    _task: tuple[tuple[object, ...], ChatMessage] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # by message object: an episode's contexts share their messages (see _system_message, _turn)
        self._count = IdentityCache(partial(message_tokens, self.counter))
        self._message_json = IdentityCache(message_json)

    def build(self, inputs: ContextInputs) -> BuiltContext:
        fixed = (self._system_message(inputs), self._task_message(inputs))
        turns = [self._turn(t) for t in inputs.history]
        fixed_cost = sum(self._count(m) for m in fixed)
        suffix_costs = [0] * (len(turns) + 1)
        for i in range(len(turns) - 1, -1, -1):
            suffix_costs[i] = suffix_costs[i + 1] + turns[i].tokens
        for start, summary in self._candidates([t.turn for t in turns]):
            cost = fixed_cost + suffix_costs[start] + (self._count(summary) if summary else 0)
            if cost > self.budget_tokens:
                continue
            messages = self._assemble(fixed, summary, turns[start:])
            tokens = cost if getattr(self.counter, "additive", False) else self.counter.count(render_messages(messages))
            if tokens <= self.budget_tokens:
                return BuiltContext(messages, tokens, start)
        # even the fixed part does not fit: it is never cut, the overflow is flagged
        tokens = self.counter.count(render_messages(fixed))
        return BuiltContext(fixed, tokens, len(turns), over_budget=tokens > self.budget_tokens)

    def encode(self, context: BuiltContext) -> bytes:
        """``encode_context`` of the context's messages, each message serialised once per episode."""
        return encode_context(context.messages, self._message_json)

    def _system_message(self, inputs: ContextInputs) -> ChatMessage:
        """Rendered again only when its inputs change (a skill is loaded, a compact step shows other tools)."""
        tools, offered, loaded = tuple(inputs.tools), tuple(inputs.offered_skills), tuple(inputs.loaded_skills)
        key = (inputs.instructions, tools, offered, loaded, inputs.compact, inputs.action_syntax)
        if self._system is None or self._system[0] != key:
            if inputs.compact is None:
                text = system_text(inputs.instructions, tools, offered, loaded, inputs.action_syntax)
            else:
                text = compact_system_text(
                    inputs.instructions, tools, offered, loaded, inputs.compact, inputs.action_syntax
                )
            self._system = key, ChatMessage(role="system", content=text)
        return self._system[1]

    def _task_message(self, inputs: ContextInputs) -> ChatMessage:
        """The same for every step of an episode: rendered once."""
        style = "full" if inputs.compact is None else inputs.compact.observations
        key = (inputs.goal, tuple(inputs.memories), inputs.first_observation, style)
        if self._task is None or self._task[0] != key:
            text = task_text(inputs.goal, inputs.memories, inputs.first_observation, self.turn_chars, style)
            self._task = key, ChatMessage(role="user", content=text)
        return self._task[1]

    @staticmethod
    def _candidates(turns: Sequence[HistoryTurn]) -> Iterator[tuple[int, ChatMessage | None]]:
        """(first kept turn, summary) from most to least history: one summary line per dropped turn first,
        then a single count line in place of those lines."""
        for max_lines in (SUMMARY_MAX_LINES, 0):
            for start in range(len(turns) + 1):
                yield start, summary_message(turns[:start], max_lines)

    @staticmethod
    def _assemble(
        fixed: tuple[ChatMessage, ...], summary: ChatMessage | None, kept: Sequence[_Turn]
    ) -> tuple[ChatMessage, ...]:
        messages = list(fixed)
        if summary is not None:
            messages.append(summary)
        for turn in kept:
            messages.extend(turn.messages)
        return tuple(messages)

    def _turn(self, turn: HistoryTurn) -> _Turn:
        rendered = self._turns.get(turn)
        if rendered is None:
            clipped = HistoryTurn(
                turn.step, clip(turn.output, self.turn_chars), clip(turn.feedback, self.turn_chars), turn.summary
            )
            messages = clipped.messages()
            rendered = self._turns[turn] = _Turn(clipped, messages, sum(self._count(m) for m in messages))
        return rendered
