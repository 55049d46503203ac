"""Text messages, each to or from a contact's number."""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder, at

Direction = Literal["in", "out"]
DIRECTIONS: tuple[Direction, ...] = ("in", "out")


class Message(TypedDict):
    id: str
    contact_id: str
    number: str
    direction: Direction
    text: str
    at: str
    read: bool
    pinned: bool


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    out: dict[str, Any] = {}
    for i, p in enumerate(s.sample(s.contacts(), 12) * 2, start=1):
        direction = s.pick(DIRECTIONS)
        text = s.pick(
            (
                f"See you at the {s.phrase(1)} place?",
                f"Can you send me the {s.phrase(1)} photos?",
                "Running late, sorry!",
                f"Thanks for the {s.phrase(1)} tip",
            )
        )
        out[f"msg_{i}"] = Message(
            id=f"msg_{i}",
            contact_id=p["id"],
            number=p["phone"],
            direction=direction,
            text=text,
            at=at(-s.rng.randrange(0, 7), s.rng.randrange(7, 23), s.rng.randrange(60)),
            read=direction == "out" or s.rng.random() < 0.5,
            pinned=False,
        )
    return {"messages": out}
