"""Replays a script (a list of actions or raw texts) or drives a reference solver; labelled ``scripted:<name>``."""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from functools import partial

from bus_schemas.actions import Action, Finish, SubagentSpawn
from harness_service.actions.format import render_action
from harness_service.actions.native import render_native_action
from harness_service.config import ActionSyntax
from harness_service.context.messages import ChatMessage
from harness_service.context.tokens import ApproxTokenCounter, TokenCounter, message_tokens
from harness_service.identity_cache import IdentityCache
from harness_service.policy.base import PolicyOutput
from producers.backends.base import Observation

Solver = Generator[Action | str, Observation | None, None]
"""Yields the next action and receives the observation of the one before (a sandbox reference solver)."""


def _replay(items: Sequence[Action | str]) -> Solver:
    for item in items:  # noqa: UP028 (a list iterator cannot receive the observations sent in)
        yield item


class ScriptedPolicy:
    """Each call returns the next scripted item; once the script ends, ``finish``.

    Sub-agents share the script: a spawn is followed by the child's actions, then the parent's. Actions are written
    in ``syntax`` (``HarnessConfig.action_syntax``; a ``Harness`` sets it to its own), raw texts as they are.
    """

    def __init__(
        self,
        script: Iterable[Action | str] | Solver,
        name: str,
        counter: TokenCounter | None = None,
        syntax: ActionSyntax = "action",
    ) -> None:
        self.name = f"scripted:{name}"
        self.syntax: ActionSyntax = syntax
        self.model = self.name
        self._solver = script if isinstance(script, Generator) else _replay(list(script))
        self._last: Observation | None = None
        self._started = False
        self._counter = counter or ApproxTokenCounter()
        self._message_tokens = IdentityCache(partial(message_tokens, self._counter))  # contexts share messages

    def observe(self, observation: Observation) -> None:
        """The harness reports each observation; a solver receives it with its next ``send``."""
        self._last = observation

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        item = self._next()
        if isinstance(item, str):
            text = item
        else:
            text = render_native_action(item) if self.syntax == "tool_call" else render_action(item)
        return PolicyOutput(
            text=text,
            input_tokens=sum(map(self._message_tokens, messages)),
            output_tokens=self._counter.count(text),
        )

    def _next(self) -> Action | str:
        try:
            item = self._solver.send(self._last) if self._started else next(self._solver)
        except StopIteration:
            return Finish()
        self._started = True
        return item


def delegated(solver: Solver, goal: str, tools: Sequence[str], max_steps: int = 50) -> Solver:
    """Wraps a solver so a sub-agent runs all of it; the parent then finishes with the sub-agent's summary."""
    yield SubagentSpawn(goal=goal, tools=list(tools), max_steps=max_steps)
    observation: Observation | None = None
    while True:
        try:
            action = solver.send(observation) if observation is not None else next(solver)
        except StopIteration:
            action = Finish()
        observation = yield action
        if isinstance(action, Finish):
            break
    result = observation.result if observation is not None else None
    yield Finish(answer=str(result.get("summary", "")) if isinstance(result, dict) else "")
