"""Reminders tools: create, complete, reschedule and prioritise to-dos; manage lists."""

from __future__ import annotations

from datetime import date

from pydantic import Field

from producers.backends.sandbox.apps.reminders.model import Reminder
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, NoArgs
from producers.backends.sandbox.seeding import TODAY
from producers.backends.sandbox.world import World

TOOLS = AppTools("reminders")
TOOLS.collection("reminders", Reminder, noun="reminder", search=("title", "list"), example_id="rem_1", delete=True)
TOOLS.flag(
    "reminders",
    "done",
    Reminder,
    noun="reminder",
    on=("complete", "Mark a reminder done."),
    off=("reopen", "Mark a done reminder as open again."),
    example_id="rem_1",
)


class NewReminder(Args):
    title: str = Field(min_length=1, max_length=120)
    due: date | None = None
    list: str = "inbox"
    priority: int = Field(0, ge=0, le=3)


class Due(Args):
    reminder_id: str
    due: date


class Priority(Args):
    reminder_id: str
    priority: int = Field(ge=0, le=3)


class OnDay(Args):
    day: date


class ListName(Args):
    name: str = Field(min_length=1, max_length=40, pattern=r"^[a-z0-9_\-]+$")


def _item(world: World, rid: str) -> Reminder:
    return world.get("reminders", "reminders", rid, "reminder")


_NF = {"not_found": "no such reminder"}


@TOOLS.tool(writes=True, errors={"not_found": "no such list"}, example={"title": "Pay rent", "due": "2026-03-05"})
def create_reminder(world: World, a: NewReminder) -> Reminder:
    """Add a reminder to a list."""
    world.get("reminders", "lists", a.list, "list")
    rid = world.new_id("reminders", "reminders", "rem")
    return world.put(
        "reminders",
        "reminders",
        rid,
        Reminder(
            id=rid, title=a.title, due=a.due.isoformat() if a.due else "", list=a.list, priority=a.priority, done=False
        ),
    )


@TOOLS.tool(writes=True, errors=_NF, example={"reminder_id": "rem_1", "due": "2026-03-09"})
def set_due(world: World, a: Due) -> Reminder:
    """Change a reminder's due date."""
    _item(world, a.reminder_id)
    return world.patch("reminders", "reminders", a.reminder_id, due=a.due.isoformat())


@TOOLS.tool(writes=True, errors=_NF, example={"reminder_id": "rem_1", "priority": 3})
def set_priority(world: World, a: Priority) -> Reminder:
    """Set priority 0 (none) to 3 (high)."""
    _item(world, a.reminder_id)
    return world.patch("reminders", "reminders", a.reminder_id, priority=a.priority)


@TOOLS.tool(example={"day": "2026-03-03"})
def list_due(world: World, a: OnDay) -> list[Reminder]:
    """Open reminders due on a day."""
    return [
        r for r in world.table("reminders", "reminders").values() if r["due"] == a.day.isoformat() and not r["done"]
    ]


@TOOLS.tool()
def list_overdue(world: World, a: NoArgs) -> list[Reminder]:
    """Open reminders whose due date has passed."""
    today = TODAY.isoformat()
    return [
        r for r in world.table("reminders", "reminders").values() if r["due"] and r["due"] < today and not r["done"]
    ]


@TOOLS.tool(writes=True, errors={"conflict": "a list with that name exists"}, example={"name": "errands"})
def create_list(world: World, a: ListName) -> dict[str, str]:
    """Create a reminder list."""
    if world.find("reminders", "lists", a.name):
        raise ToolFailure("conflict", f"list {a.name!r} exists")
    return world.put("reminders", "lists", a.name, {"name": a.name})


@TOOLS.tool()
def list_lists(world: World, a: NoArgs) -> list[str]:
    """Names of the reminder lists."""
    return sorted(world.table("reminders", "lists"))
