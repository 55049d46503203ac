"""What a task template is: a seeded builder of (goal, fixtures, memories, criteria) plus its reference solver.

Helpers here keep templates declarative: ``exists``/``equals``/``answer``/``looked_up``/``only`` build criteria,
``call`` builds a tool call for a solver.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from bus_schemas.actions import Finish, MemoryRead, SkillLoad, ToolCall
from bus_schemas.events.tasks import (
    AnswerCriterion,
    CallAnyCriterion,
    CallStep,
    CapabilityTag,
    CompletionCriterion,
    MemoryFact,
    NoCollateralCriterion,
    StateCriterion,
)
from producers.backends.sandbox.pools import SPLITS, Split
from producers.backends.sandbox.world import State

Action = ToolCall | MemoryRead | SkillLoad | Finish

# A reference solver is sent each step's Observation (None before the first step); it indexes the JSON result by
# the shape it knows its tool returns, so the send type is Any: a wrong guess fails the template's soundness test.
Solver = Generator[Action, Any, None]
Category = Literal["tool_use", "memory", "skills", "sub_agent"]


class NoInstance(ValueError):
    """A template cannot build an instance from this world (its rows lack what the goal needs, e.g. three
    options with different values): the caller tries another instance instead of failing."""


@dataclass(frozen=True)
class Ctx:
    """What a builder may use: its own random stream and the (read-only) seeded world of the split."""

    rng: random.Random
    world: State
    split: Split

    def pick(self, items: Sequence[Any]) -> Any:
        return items[self.rng.randrange(len(items))]

    def part(self, items: Sequence[Any]) -> list[Any]:
        """This split's third of a parameter range, so held-out instances never reuse train parameters."""
        return list(items[SPLITS.index(self.split) :: len(SPLITS)])

    def rows(self, app: str, coll: str) -> list[dict[str, Any]]:
        return list(self.world[app][coll].values())


@dataclass
class Instance:
    goal: str
    criteria: list[CompletionCriterion]
    solve: Callable[[], Solver]
    fixtures: dict[str, Any] = field(default_factory=dict)
    memories: list[MemoryFact] = field(default_factory=list)


@dataclass(frozen=True)
class Template:
    id: str
    category: Category
    difficulty: Literal[1, 2, 3]
    tags: tuple[CapabilityTag, ...]
    apps: tuple[str, ...]
    build: Callable[[Ctx], Instance]
    skills: tuple[str, ...] = ()


def call(tool: str, /, **args: Any) -> ToolCall:
    return ToolCall(name=tool, args=args)


def pay(name: str, amount: float, note: str) -> Solver:
    """Sub-plan: find the contact, stage the payment, confirm it (``yield from pay(...)``)."""
    found = yield call("contacts.search_contacts", query=name)
    staged = yield call("wallet.send_money", contact_id=found.result[0]["id"], amount=amount, note=note)
    yield call("wallet.confirm_payment", id=staged.result["id"])


def exists(cid: str, description: str, path: str, where: dict[str, Any], new: bool = True) -> StateCriterion:
    return StateCriterion(
        id=cid, description=description, predicate="state.exists", params={"path": path, "where": where, "new": new}
    )


def absent(cid: str, description: str, path: str, where: dict[str, Any]) -> StateCriterion:
    return StateCriterion(
        id=cid, description=description, predicate="state.absent", params={"path": path, "where": where}
    )


def equals(
    cid: str, description: str, path: str, *, value: Any = None, where: dict[str, Any] | None = None
) -> StateCriterion:
    params: dict[str, Any] = {"path": path, "where": where} if where is not None else {"path": path, "value": value}
    return StateCriterion(id=cid, description=description, predicate="state.equals", params=params)


def answer(
    expected: list[str],
    match: Literal["exact", "normalized", "contains", "numeric"] = "normalized",
    tolerance: float | None = None,
) -> AnswerCriterion:
    return AnswerCriterion(
        id="answer", description="the final answer is right", expected=expected, match=match, tolerance=tolerance
    )


def looked_up(cid: str, description: str, *options: tuple[str, dict[str, Any]]) -> CallAnyCriterion:
    """A successful call of one of ``options`` (tool, where): the evidence an answer must rest on, whichever of
    the tools that serve it the policy used. Without it a choice among n options passes 1 time in n by guessing."""
    return CallAnyCriterion(
        id=cid, description=description, options=[CallStep(tool=tool, where=where) for tool, where in options]
    )


def only(*paths: str) -> NoCollateralCriterion:
    return NoCollateralCriterion(
        id="no_collateral", description="nothing outside the task's scope changed", allowed_paths=list(paths)
    )


def memory(*facts: str) -> list[MemoryFact]:
    return [MemoryFact(content=f, tags=["user_profile"]) for f in facts]
