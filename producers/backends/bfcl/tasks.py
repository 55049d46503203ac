"""BFCL multi-turn entries as our tasks, and their ground truth as our calls.

A BFCL entry has several user turns. The first is the task's goal; the others are the task's scripted user
(``SimulatedUser.replies``): a policy that has done what was asked asks the user (``clarify``) and gets the next
request as the answer, as BFCL's loop hands the model the next turn. The ground truth stays in the wheel (the
judge reads it by the entry's id), so a task event carries no reference trajectory.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from bus_schemas.actions import Action, Clarify, Finish, ToolCall
from bus_schemas.envelope import Producer
from bus_schemas.events.tasks import (
    Budgets,
    CallOrderCriterion,
    CompletionCriterion,
    SimulatedUser,
    TaskSource,
    TaskSpecified,
)
from producers.backends.bfcl.world import BfclWorld, iter_jsonl

CATEGORIES = {"multi_turn_base": False, "multi_turn_long_context": True}
"""The multi-turn categories supported, and whether BFCL loads their scenarios with ``long_context``."""
VERSION = "BFCL_v4"
PRODUCER = Producer(service="bfcl-tasks", version="2026.3.23")
NEXT_TURN = "Done. What would you like me to do next?"
INSTRUCTIONS = (
    "This is a multi-turn session with a user. Do what the current request asks with the tools. When it is "
    "done, ask the user for their next request (clarify); finish when they have none."
)


def _check(category: str) -> None:
    if category not in CATEGORIES:
        raise ValueError(f"unsupported BFCL category {category!r}; supported: {', '.join(CATEGORIES)}")


@cache
def entries(category: str) -> dict[str, dict[str, Any]]:
    """The wheel's entries of a category by id, in file order."""
    _check(category)
    return {row["id"]: row for row in iter_jsonl(f"{VERSION}_{category}.json")}


@cache
def ground_truth(category: str) -> dict[str, list[list[str]]]:
    """The wheel's expected calls of each entry, per turn, as BFCL writes them (``cd(folder='x')``)."""
    _check(category)
    return {row["id"]: row["ground_truth"] for row in iter_jsonl(f"possible_answer/{VERSION}_{category}.json")}


def _text(turn: list[dict[str, Any]]) -> str:
    return "\n".join(str(m["content"]) for m in turn if m.get("role") == "user")


def world_for(params: dict[str, Any]) -> BfclWorld:
    """Fresh instances for a task's ``backend_params``."""
    return BfclWorld(
        params["initial_config"],
        list(params["involved_classes"]),
        list(params.get("excluded_function") or []),
        long_context=bool(params.get("long_context", False)),
    )


def expected_calls(params: dict[str, Any]) -> list[list[ToolCall]]:
    """The entry's ground truth as our tool calls, per turn."""
    world = world_for(params)
    return [[world.parse(text) for text in turn] for turn in ground_truth(params["category"])[params["bfcl_id"]]]


def gold_script(task: TaskSpecified) -> list[Action]:
    """The ground truth as a policy's actions: each turn's calls, a question for the next turn, then finish."""
    turns = expected_calls(task.backend_params)
    script: list[Action] = []
    for i, calls in enumerate(turns):
        script += calls
        if i < len(turns) - 1:
            script.append(Clarify(question=NEXT_TURN))
    return [*script, Finish(answer="done")]


def to_task(
    entry: dict[str, Any], category: str, split: str = "test", call_criteria: bool = False, run_id: str = "bfcl"
) -> TaskSpecified:
    """One BFCL entry as a task of the ``bfcl`` backend; ``call_criteria`` adds the expected tools in order as a
    ``call_order`` criterion (stricter than BFCL, whose own call-order check is disabled)."""
    turns = [_text(turn) for turn in entry["question"]]
    params: dict[str, Any] = {
        "bfcl_id": entry["id"],
        "category": category,
        "initial_config": entry["initial_config"],
        "involved_classes": entry["involved_classes"],
        "excluded_function": entry.get("excluded_function") or [],
        "long_context": CATEGORIES[category],
        "turns": len(turns),
    }
    calls = [c for turn in expected_calls(params) for c in turn]
    criteria: list[CompletionCriterion] = []
    if call_criteria and calls:
        criteria.append(
            CallOrderCriterion(
                id="bfcl.call_order", description="the expected tools, in order", steps=[c.name for c in calls]
            )
        )
    return TaskSpecified(
        producer=PRODUCER,
        run_id=run_id,
        task_id=f"bfcl.{entry['id']}",
        goal=turns[0],
        category="tool_use",
        tags=["multi_step_dependency", "state_tracking"],
        split=split,  # type: ignore[arg-type]
        backend="bfcl",
        source=TaskSource(kind="external", generator=f"bfcl-eval {VERSION}", instance_key=entry["id"]),
        backend_params=params,
        criteria=criteria,
        user=SimulatedUser(replies=turns[1:], max_turns=len(turns) - 1) if len(turns) > 1 else None,
        budgets=Budgets(max_steps=max(30, 2 * (len(calls) + len(turns)) + 5)),
    )


def bfcl_tasks(
    category: str = "multi_turn_base",
    limit: int | None = None,
    split: str = "test",
    call_criteria: bool = False,
    run_id: str = "bfcl",
) -> list[TaskSpecified]:
    """The category's entries as tasks, in the wheel's order; the first ``limit`` when given."""
    rows = list(entries(category).values())[:limit]
    return [to_task(row, category, split, call_criteria, run_id) for row in rows]
