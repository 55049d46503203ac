"""Reminder items grouped in named lists."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder, day


class Reminder(TypedDict):
    id: str
    title: str
    due: str
    list: str
    priority: int
    done: bool


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    items = {}
    for i in range(1, 11):
        items[f"rem_{i}"] = Reminder(
            id=f"rem_{i}",
            title=f"{s.pick(('Buy', 'Call', 'Book', 'Fix', 'Return'))} {s.phrase(1)}",
            due=day(s.rng.randrange(-4, 10)),
            list=s.pick(("inbox", "home", "work")),
            priority=s.rng.randrange(0, 4),
            done=i % 5 == 0,
        )
    lists = {name: {"name": name} for name in ("inbox", "home", "work")}
    return {"reminders": items, "lists": lists}
