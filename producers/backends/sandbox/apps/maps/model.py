"""Places on a flat km grid; every contact's address is a place, so maps links to contacts."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder

CATEGORIES = ("cafe", "gym", "pharmacy", "park", "cinema", "supermarket")
SPEED_KMH = {"driving": 30.0, "transit": 20.0, "walking": 5.0, "cycling": 15.0}


class Place(TypedDict):
    id: str
    name: str
    address: str
    category: str
    x: float
    y: float
    saved: bool


def distance_km(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    return round(math.hypot(a["x"] - b["x"], a["y"] - b["y"]) * 1.3, 2)


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    places: dict[str, Any] = {}

    def add(name: str, address: str, category: str, saved: bool = False) -> None:
        pid = f"pl_{len(places) + 1}"
        places[pid] = Place(
            id=pid,
            name=name,
            address=address,
            category=category,
            x=round(s.rng.uniform(0, 20), 2),
            y=round(s.rng.uniform(0, 20), 2),
            saved=saved,
        )

    add("Home", s.address(), "home", saved=True)
    add("Work", s.address(), "work", saved=True)
    add("Airport", "1 Airport Rd", "airport")
    for c in s.contacts():
        add(f"{c['name']} (home)", c["address"], "residence")
    for venue in s.pool.venues:
        add(f"{venue} {s.pick(CATEGORIES).title()}", s.address(), s.pick(CATEGORIES))
    return {"places": places}
