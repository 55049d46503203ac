"""Call log and voicemails, linked to contacts by number."""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder, at

Direction = Literal["incoming", "outgoing", "missed"]
DIRECTIONS: tuple[Direction, ...] = ("incoming", "outgoing", "missed")


class Call(TypedDict):
    id: str
    number: str
    contact_id: str
    direction: Direction
    at: str
    duration_s: int


class Voicemail(TypedDict):
    id: str
    number: str
    contact_id: str
    at: str
    transcript: str
    heard: bool


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    people = s.contacts()
    calls: dict[str, Any] = {}
    for i in range(1, 16):
        p = s.pick(people)
        direction = s.pick(DIRECTIONS)
        calls[f"call_{i}"] = Call(
            id=f"call_{i}",
            number=p["phone"],
            contact_id=p["id"],
            direction=direction,
            at=at(-s.rng.randrange(0, 10), s.rng.randrange(8, 21)),
            duration_s=0 if direction == "missed" else s.rng.randrange(20, 900),
        )
    mails: dict[str, Any] = {}
    for i in range(1, 6):
        p = s.pick(people)
        mails[f"vm_{i}"] = Voicemail(
            id=f"vm_{i}",
            number=p["phone"],
            contact_id=p["id"],
            at=at(-s.rng.randrange(0, 5), s.rng.randrange(8, 21)),
            transcript=f"Hi, it's {p['name'].split()[0]}, call me back about the {s.phrase(1)}.",
            heard=i % 2 == 0,
        )
    return {"calls": calls, "voicemails": mails}
