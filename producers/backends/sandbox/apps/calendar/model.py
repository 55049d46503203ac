"""Calendar events over the next two weeks; attendees are contact ids."""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder, at


class Event(TypedDict):
    id: str
    title: str
    start: str
    end: str
    location: str
    attendees: list[str]
    status: Literal["confirmed", "invited", "declined"]
    reminder_min: int


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    events: dict[str, Any] = {}
    people = s.contacts()
    for i in range(1, 13):
        d, h = s.rng.randrange(0, 14), s.rng.randrange(8, 19)
        events[f"evt_{i}"] = Event(
            id=f"evt_{i}",
            title=s.pick(("Standup", "Lunch", "Dentist", "Gym", "1:1", "Review", "Call", "Yoga")) + f" {s.phrase(1)}",
            start=at(d, h),
            end=at(d, h + 1),
            location=s.address(),
            attendees=[p["id"] for p in s.sample(people, s.rng.randrange(0, 3))],
            status="invited" if i % 4 == 0 else "confirmed",
            reminder_min=0,
        )
    return {"events": events}
