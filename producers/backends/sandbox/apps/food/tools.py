"""Food delivery tools: browse restaurants and menus, fill the cart, check out with confirmation."""

from __future__ import annotations

from pydantic import Field

from producers.backends.sandbox.apps import carts
from producers.backends.sandbox.apps.food.model import DELIVERY_FEE, Dish, Restaurant
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, IdArgs, NoArgs
from producers.backends.sandbox.world import World

TOOLS = AppTools("food")
TOOLS.collection("restaurants", Restaurant, noun="restaurant", search=("name", "cuisine"), example_id="rest_1")
TOOLS.collection("orders", carts.Order, noun="order", search=("status", "date"), example_id="ord_1")
TOOLS.records.update(dishes=Dish, cart=carts.CartLine)


class Menu(Args):
    restaurant_id: str
    vegetarian_only: bool = False


class Cuisine(Args):
    cuisine: str = Field(min_length=2)


@TOOLS.tool(errors={"not_found": "no such restaurant"}, example={"restaurant_id": "rest_1"})
def menu(world: World, a: Menu) -> list[Dish]:
    """Dishes of a restaurant."""
    world.get("food", "restaurants", a.restaurant_id, "restaurant")
    return [
        d
        for d in world.table("food", "dishes").values()
        if d["restaurant_id"] == a.restaurant_id and (d["vegetarian"] or not a.vegetarian_only)
    ]


@TOOLS.tool(example={"cuisine": "Italian"})
def by_cuisine(world: World, a: Cuisine) -> list[Restaurant]:
    """Open restaurants of a cuisine, best rated first."""
    hits = [
        r
        for r in world.table("food", "restaurants").values()
        if r["cuisine"].lower() == a.cuisine.lower() and r["open"]
    ]
    return sorted(hits, key=lambda r: (-r["rating"], r["id"]))


@TOOLS.tool(
    writes=True,
    errors={
        "not_found": "no such dish",
        "unavailable": "sold out",
        "conflict": "the cart holds another restaurant's dishes, or the restaurant is closed",
    },
    example={"item_id": "dish_1_1"},
)
def add_to_cart(world: World, a: carts.AddItem) -> carts.CartLine:
    """Add a dish to the cart (one restaurant per order)."""
    dish = world.get("food", "dishes", a.item_id, "dish")
    if not world.table("food", "restaurants")[dish["restaurant_id"]]["open"]:
        raise ToolFailure("conflict", f"restaurant {dish['restaurant_id']} is closed now")
    others = {world.table("food", "dishes")[i]["restaurant_id"] for i in world.table("food", "cart")} - {
        dish["restaurant_id"]
    }
    if others:
        raise ToolFailure("conflict", "the cart holds dishes from another restaurant; clear it first")
    return carts.add(world, "food", "dishes", a)


@TOOLS.tool(writes=True, errors={"not_found": "the dish is not in the cart"}, example={"item_id": "dish_1_1"})
def remove_from_cart(world: World, a: carts.ItemRef) -> carts.CartLine:
    """Remove a dish from the cart."""
    return carts.remove(world, "food", a)


@TOOLS.tool()
def view_cart(world: World, a: NoArgs) -> list[carts.CartLine]:
    """Dishes in the cart."""
    return list(world.table("food", "cart").values())


@TOOLS.tool(writes=True)
def clear_cart(world: World, a: NoArgs) -> int:
    """Empty the cart; returns how many lines were removed."""
    lines = list(world.table("food", "cart"))
    for item_id in lines:
        world.delete("food", "cart", item_id)
    return len(lines)


@TOOLS.tool(
    writes=True,
    errors={"conflict": "the cart is empty or the card is frozen", "needs_confirmation": "called without confirm=true"},
    example={"confirm": True},
)
def checkout(world: World, a: carts.Checkout) -> carts.Order:
    """Place the order (a delivery fee is added). Needs confirm=true."""
    return carts.checkout(world, "food", a, extra=DELIVERY_FEE)


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such order", "conflict": "the order is not in placed state"},
    example={"id": "ord_2"},
)
def cancel_order(world: World, a: IdArgs) -> carts.Order:
    """Cancel a placed order."""
    return carts.set_status(world, "food", a.id, "placed", "cancelled")
