"""Notes table and seeded notes (shopping lists, gate codes, ideas)."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder

FOLDERS = ("personal", "work", "travel", "recipes")


class Note(TypedDict):
    id: str
    title: str
    body: str
    folder: str
    tags: list[str]
    pinned: bool


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    notes = {}
    for i in range(1, 9):
        topic = s.phrase(2)
        notes[f"note_{i}"] = Note(
            id=f"note_{i}",
            title=topic.title(),
            body=f"Remember: {s.phrase(3)}. Code {s.rng.randrange(1000, 9999)}.",
            folder=s.pick(FOLDERS),
            tags=s.sample(("todo", "idea", "home", "urgent"), s.rng.randrange(0, 2)),
            pinned=False,
        )
    return {"notes": notes}
