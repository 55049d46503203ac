"""The contacts table and its seeded data."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder, day

RELATIONS = ("friend", "coworker", "family", "neighbor", "manager", "dentist", "landlord")


class Contact(TypedDict):
    id: str
    name: str
    phone: str
    email: str
    address: str
    relation: str
    birthday: str
    favorite: bool
    blocked: bool


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    people: dict[str, Any] = {}
    names = [(first, last) for first in s.pool.first for last in s.pool.last]
    for i, (first, last) in enumerate(s.sample(names, 24), start=1):
        people[f"c_{i}"] = Contact(
            id=f"c_{i}",
            name=f"{first} {last}",
            phone=s.phone(),
            email=f"{first.lower()}.{last.lower()}@mail.test",
            address=s.address(),
            relation=s.pick(RELATIONS),
            birthday=day(s.rng.randrange(-200, 160)),
            favorite=s.rng.random() < 0.2,
            blocked=False,
        )
    return {"contacts": people}
