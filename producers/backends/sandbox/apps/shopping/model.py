"""Products and past orders."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder, day


class Product(TypedDict):
    id: str
    name: str
    brand: str
    price: float
    rating: float
    available: bool
    wishlisted: bool


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    products = {}
    n = 0
    for item in s.pool.items:
        for brand in s.sample(("Acme", "Nimbus", "Orbit", "Pico", "Zenith"), 3):
            n += 1
            products[f"prod_{n}"] = Product(
                id=f"prod_{n}",
                name=f"{brand} {item}",
                brand=brand,
                price=s.money(9, 250),
                rating=round(s.rng.uniform(2.8, 5.0), 1),
                available=n % 9 != 0,
                wishlisted=False,
            )
    delivered = {
        "item_id": "prod_1",
        "name": products["prod_1"]["name"],
        "price": products["prod_1"]["price"],
        "qty": 1,
    }
    orders = {
        "ord_1": {
            "id": "ord_1",
            "lines": [delivered],
            "total": delivered["price"],
            "card_id": "card_1",
            "status": "delivered",
            "date": day(-5),
        }
    }
    return {"products": products, "cart": {}, "orders": orders}
