"""Alarms, running timers and world clocks."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class Alarm(TypedDict):
    id: str
    time: str
    label: str
    days: list[str]
    enabled: bool


class Timer(TypedDict):
    id: str
    label: str
    minutes: int
    running: bool


class WorldClock(TypedDict):
    id: str
    city: str


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    alarms = {}
    for i in range(1, 5):
        hour = 5 + i
        alarms[f"al_{i}"] = Alarm(
            id=f"al_{i}",
            time=f"{hour:02d}:{s.pick(('00', '15', '30', '45'))}",
            label=s.pick(("Wake up", "Gym", "Meds", "Walk dog")),
            days=s.sample(DAYS, s.rng.randrange(1, 6)),
            enabled=i % 2 == 1,
        )
    timers = {"tm_1": Timer(id="tm_1", label="Laundry", minutes=45, running=True)}
    clocks = {
        f"wc_{i}": WorldClock(id=f"wc_{i}", city=city) for i, city in enumerate(s.sample(s.pool.cities, 2), start=1)
    }
    return {"alarms": alarms, "timers": timers, "world_clocks": clocks}
