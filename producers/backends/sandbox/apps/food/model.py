"""Restaurants (one per venue of the pool) and their dishes."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder, day

DELIVERY_FEE = 3.5


class Restaurant(TypedDict):
    id: str
    name: str
    cuisine: str
    rating: float
    delivery_min: int
    open: bool


class Dish(TypedDict):
    id: str
    restaurant_id: str
    name: str
    price: float
    vegetarian: bool
    available: bool


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    restaurants, dishes = {}, {}
    for i, venue in enumerate(s.pool.venues, start=1):
        cuisine = s.pick(s.pool.cuisines)
        restaurants[f"rest_{i}"] = Restaurant(
            id=f"rest_{i}",
            name=f"{venue} {cuisine} Kitchen",
            cuisine=cuisine,
            rating=round(s.rng.uniform(3.2, 4.9), 1),
            delivery_min=s.rng.randrange(15, 60),
            open=i % 7 != 0,
        )
        for j in range(1, 5):
            did = f"dish_{i}_{j}"
            dishes[did] = Dish(
                id=did,
                restaurant_id=f"rest_{i}",
                name=f"{s.phrase(1).title()} {s.pick(('Bowl', 'Curry', 'Pasta', 'Wrap', 'Salad', 'Soup'))}",
                price=s.money(7, 24),
                vegetarian=s.rng.random() < 0.4,
                available=j != 4 or i % 3 != 0,
            )
    orders = {
        "ord_1": {
            "id": "ord_1",
            "lines": [],
            "total": 21.4,
            "card_id": "card_1",
            "status": "delivered",
            "date": day(-2),
        }
    }
    return {"restaurants": restaurants, "dishes": dishes, "cart": {}, "orders": orders}
