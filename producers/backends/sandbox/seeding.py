"""Seeded data generation shared by the apps: one ``random.Random(seed)`` drives a whole world."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, TypeVar

from producers.backends.sandbox.pools import Pool

T = TypeVar("T")

NOW = datetime(2026, 3, 2, 9, 0)  # the simulated phone's clock: Monday morning, fixed for reproducibility
TODAY = NOW.date()


def day(offset: int) -> str:
    return (TODAY + timedelta(days=offset)).isoformat()


def at(offset_days: int, hour: int, minute: int = 0) -> str:
    return (
        datetime.combine(TODAY + timedelta(days=offset_days), datetime.min.time())
        .replace(hour=hour, minute=minute)
        .isoformat(timespec="minutes")
    )


def parse_day(value: str) -> date:
    return date.fromisoformat(value[:10])


@dataclass
class Seeder:
    """Random draws for one world; apps seeded later may read what earlier apps produced (cross-app links)."""

    rng: random.Random
    pool: Pool
    state: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def pick(self, items: Sequence[T]) -> T:
        return items[self.rng.randrange(len(items))]

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        return self.rng.sample(list(items), min(k, len(items)))

    def phone(self) -> str:
        return f"+1-555-{self.rng.randrange(1000, 9999)}"

    def money(self, low: float, high: float) -> float:
        return round(self.rng.uniform(low, high), 2)

    def address(self) -> str:
        return f"{self.rng.randrange(1, 400)} {self.pick(self.pool.streets)} St"

    def phrase(self, n: int = 2) -> str:
        return " ".join(self.sample(self.pool.words, n))

    def contacts(self) -> list[dict[str, Any]]:
        return list(self.state["contacts"]["contacts"].values())
