"""Ride history and the fare model, priced from map distance."""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder, day

PRODUCTS = {"economy": (2.5, 1.1, 4), "comfort": (4.0, 1.6, 6), "xl": (5.0, 2.1, 9)}  # base, per km, eta min


class Ride(TypedDict):
    id: str
    product: str
    pickup: str
    dropoff: str
    fare: float
    status: Literal["awaiting_pickup_confirmation", "confirmed", "completed", "cancelled"]
    card_id: str
    tip: float
    rating: int
    date: str


def fare(product: str, km: float) -> float:
    base, per_km, _ = PRODUCTS[product]
    return round(base + per_km * km, 2)


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    rides = {}
    for i in range(1, 6):
        rides[f"ride_{i}"] = Ride(
            id=f"ride_{i}",
            product=s.pick(tuple(PRODUCTS)),
            pickup="pl_1",
            dropoff=f"pl_{s.rng.randrange(2, 20)}",
            fare=s.money(8, 40),
            status="completed",
            card_id="card_1",
            tip=0.0,
            rating=0,
            date=day(-i * 3),
        )
    return {"rides": rides}
