"""The cart-and-checkout flow shared by shopping and food: checkout asks for confirmation first."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from typing_extensions import TypedDict

from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import Args
from producers.backends.sandbox.seeding import TODAY
from producers.backends.sandbox.world import World


class CartLine(TypedDict):
    item_id: str
    name: str
    price: float
    qty: int


class Order(TypedDict):
    id: str
    lines: list[CartLine]
    total: float
    card_id: str
    status: Literal["placed", "delivered", "cancelled", "returned"]
    date: str


class AddItem(Args):
    item_id: str
    qty: int = Field(1, ge=1, le=20)


class ItemRef(Args):
    item_id: str


class Checkout(Args):
    confirm: bool = Field(
        False, description="Must be true to place the order; without it you get a summary to confirm."
    )


def add(world: World, app: str, catalog: str, a: AddItem) -> CartLine:
    item = world.get(app, catalog, a.item_id, "item")
    if not item.get("available", True):
        raise ToolFailure("unavailable", f"{item['name']} is out of stock", retryable=False)
    line = world.find(app, "cart", a.item_id)
    qty = a.qty + (line["qty"] if line else 0)
    return world.put(
        app, "cart", a.item_id, CartLine(item_id=a.item_id, name=item["name"], price=item["price"], qty=qty)
    )


def remove(world: World, app: str, a: ItemRef) -> CartLine:
    world.get(app, "cart", a.item_id, "cart line")
    return world.delete(app, "cart", a.item_id)


def total(world: World, app: str) -> float:
    return round(sum(line["price"] * line["qty"] for line in world.table(app, "cart").values()), 2)


def checkout(world: World, app: str, a: Checkout, extra: float = 0.0) -> Order:
    lines = list(world.table(app, "cart").values())
    if not lines:
        raise ToolFailure("conflict", "the cart is empty")
    amount = round(total(world, app) + extra, 2)
    if not a.confirm:
        raise ToolFailure(
            "needs_confirmation",
            f"order total {amount} for {len(lines)} line(s); call again with confirm=true to place it",
        )
    card_id = world.table("wallet", "account")["main"]["default_card"]
    if world.table("wallet", "cards")[card_id]["frozen"]:
        raise ToolFailure("conflict", f"default card {card_id} is frozen")
    oid = world.new_id(app, "orders", "ord")
    for line in lines:
        world.delete(app, "cart", line["item_id"])
    return world.put(
        app,
        "orders",
        oid,
        Order(id=oid, lines=lines, total=amount, card_id=card_id, status="placed", date=TODAY.isoformat()),
    )


def set_status(world: World, app: str, order_id: str, required: str, status: str) -> Order:
    order = world.get(app, "orders", order_id, "order")
    if order["status"] != required:
        raise ToolFailure("conflict", f"order {order_id} is {order['status']}, not {required}")
    return world.patch(app, "orders", order_id, status=status)
