"""Shopping tools: find products, cart, confirmed checkout, cancel or return orders, wishlist."""

from __future__ import annotations

from pydantic import Field

from producers.backends.sandbox.apps import carts
from producers.backends.sandbox.apps.shopping.model import Product
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, IdArgs, NoArgs
from producers.backends.sandbox.world import World

TOOLS = AppTools("shopping")
TOOLS.collection("products", Product, noun="product", search=("name", "brand"), example_id="prod_1")
TOOLS.collection("orders", carts.Order, noun="order", search=("status", "date"), example_id="ord_1")
TOOLS.records.update(cart=carts.CartLine)
TOOLS.flag(
    "products",
    "wishlisted",
    Product,
    noun="product",
    on=("add_to_wishlist", "Put a product on the wishlist."),
    off=("remove_from_wishlist", "Take a product off the wishlist."),
    example_id="prod_1",
)


class Cheapest(Args):
    query: str = Field(min_length=1)
    min_rating: float = Field(0.0, ge=0, le=5)


@TOOLS.tool(errors={"not_found": "nothing available matches"}, example={"query": "a"})
def cheapest(world: World, a: Cheapest) -> Product:
    """The cheapest available product whose name matches, with at least a rating."""
    needle = a.query.lower()
    hits = [
        p
        for p in world.table("shopping", "products").values()
        if needle in p["name"].lower() and p["available"] and p["rating"] >= a.min_rating
    ]
    if not hits:
        raise ToolFailure("not_found", f"no available product matches {a.query!r}")
    return min(hits, key=lambda p: (p["price"], p["id"]))


@TOOLS.tool(
    writes=True, errors={"not_found": "no such product", "unavailable": "out of stock"}, example={"item_id": "prod_2"}
)
def add_to_cart(world: World, a: carts.AddItem) -> carts.CartLine:
    """Add a product to the cart."""
    return carts.add(world, "shopping", "products", a)


@TOOLS.tool(writes=True, errors={"not_found": "the product is not in the cart"}, example={"item_id": "prod_2"})
def remove_from_cart(world: World, a: carts.ItemRef) -> carts.CartLine:
    """Remove a product from the cart."""
    return carts.remove(world, "shopping", a)


@TOOLS.tool()
def view_cart(world: World, a: NoArgs) -> list[carts.CartLine]:
    """Products in the cart."""
    return list(world.table("shopping", "cart").values())


@TOOLS.tool(
    writes=True,
    errors={"conflict": "the cart is empty or the card is frozen", "needs_confirmation": "called without confirm=true"},
    example={"confirm": True},
)
def checkout(world: World, a: carts.Checkout) -> carts.Order:
    """Buy what is in the cart with the default card. Needs confirm=true."""
    return carts.checkout(world, "shopping", a)


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such order", "conflict": "the order is not in placed state"},
    example={"id": "ord_2"},
)
def cancel_order(world: World, a: IdArgs) -> carts.Order:
    """Cancel an order that has not been delivered."""
    return carts.set_status(world, "shopping", a.id, "placed", "cancelled")


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such order", "conflict": "the order is not delivered"},
    example={"id": "ord_1"},
)
def return_order(world: World, a: IdArgs) -> carts.Order:
    """Return a delivered order for a refund."""
    return carts.set_status(world, "shopping", a.id, "delivered", "returned")


@TOOLS.tool()
def list_wishlist(world: World, a: NoArgs) -> list[Product]:
    """Wishlisted products."""
    return [p for p in world.table("shopping", "products").values() if p["wishlisted"]]
