"""Ride-hailing tools: estimate, request (then confirm pickup), cancel, tip and rate."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from typing_extensions import TypedDict

from producers.backends.sandbox.apps.common import require_permission
from producers.backends.sandbox.apps.maps.model import distance_km
from producers.backends.sandbox.apps.maps.tools import place
from producers.backends.sandbox.apps.rides.model import PRODUCTS, Ride, fare
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, IdArgs, NoArgs
from producers.backends.sandbox.seeding import TODAY
from producers.backends.sandbox.world import World

TOOLS = AppTools("rides")
TOOLS.collection("rides", Ride, noun="ride", search=("product", "status", "dropoff"), example_id="ride_1")

Product = Literal["economy", "comfort", "xl"]


class Quote(TypedDict):
    product: str
    fare: float
    eta_min: int
    distance_km: float


class Trip(Args):
    pickup_id: str = Field(description="Place id to be picked up at.")
    dropoff_id: str


class RequestArgs(Trip):
    product: Product = "economy"


class Tip(Args):
    ride_id: str
    amount: float = Field(gt=0, le=200)


class Rate(Args):
    ride_id: str
    stars: int = Field(ge=1, le=5)


def _ride(world: World, ride_id: str, *statuses: str) -> Ride:
    ride = world.get("rides", "rides", ride_id, "ride")
    if statuses and ride["status"] not in statuses:
        raise ToolFailure("conflict", f"ride {ride_id} is {ride['status']}")
    return ride


def quotes(world: World, pickup_id: str, dropoff_id: str) -> list[Quote]:
    km = distance_km(place(world, pickup_id), place(world, dropoff_id))
    return [Quote(product=p, fare=fare(p, km), eta_min=eta, distance_km=km) for p, (_, _, eta) in PRODUCTS.items()]


_ACTIVE = ("awaiting_pickup_confirmation", "confirmed")


@TOOLS.tool(errors={"not_found": "no such place"}, example={"pickup_id": "pl_1", "dropoff_id": "pl_3"})
def estimate(world: World, a: Trip) -> list[Quote]:
    """Fare and pickup ETA of every ride product for a trip."""
    return quotes(world, a.pickup_id, a.dropoff_id)


@TOOLS.tool(
    writes=True,
    errors={
        "not_found": "no such place",
        "permission_denied": "rides.location permission not granted",
        "conflict": "another ride is active, or the default card is frozen",
    },
    example={"pickup_id": "pl_1", "dropoff_id": "pl_3"},
)
def request_ride(world: World, a: RequestArgs) -> Ride:
    """Request a ride. The driver waits until rides.confirm_pickup is called with the ride id."""
    require_permission(world, "rides.location")
    if any(r["status"] in _ACTIVE for r in world.table("rides", "rides").values()):
        raise ToolFailure("conflict", "another ride is active; cancel or finish it first")
    card_id = world.table("wallet", "account")["main"]["default_card"]
    if world.table("wallet", "cards")[card_id]["frozen"]:
        raise ToolFailure("conflict", f"default card {card_id} is frozen")
    price = next(q["fare"] for q in quotes(world, a.pickup_id, a.dropoff_id) if q["product"] == a.product)
    rid = world.new_id("rides", "rides", "ride")
    return world.put(
        "rides",
        "rides",
        rid,
        Ride(
            id=rid,
            product=a.product,
            pickup=a.pickup_id,
            dropoff=a.dropoff_id,
            fare=price,
            status="awaiting_pickup_confirmation",
            card_id=card_id,
            tip=0.0,
            rating=0,
            date=TODAY.isoformat(),
        ),
    )


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such ride", "conflict": "not awaiting pickup confirmation"},
    example={"id": "ride_6"},
)
def confirm_pickup(world: World, a: IdArgs) -> Ride:
    """Confirm the pickup point so the driver comes."""
    _ride(world, a.id, "awaiting_pickup_confirmation")
    return world.patch("rides", "rides", a.id, status="confirmed")


@TOOLS.tool(
    writes=True, errors={"not_found": "no such ride", "conflict": "the ride is not active"}, example={"id": "ride_6"}
)
def cancel_ride(world: World, a: IdArgs) -> Ride:
    """Cancel an active ride."""
    _ride(world, a.id, *_ACTIVE)
    return world.patch("rides", "rides", a.id, status="cancelled")


@TOOLS.tool(errors={"not_found": "no active ride"})
def active_ride(world: World, a: NoArgs) -> Ride:
    """The ride in progress, if any."""
    for ride in world.table("rides", "rides").values():
        if ride["status"] in _ACTIVE:
            return ride
    raise ToolFailure("not_found", "no active ride")


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such ride", "conflict": "the ride is not completed"},
    example={"ride_id": "ride_1", "amount": 3.0},
)
def tip_driver(world: World, a: Tip) -> Ride:
    """Tip the driver of a completed ride."""
    _ride(world, a.ride_id, "completed")
    return world.patch("rides", "rides", a.ride_id, tip=a.amount)


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such ride", "conflict": "the ride is not completed"},
    example={"ride_id": "ride_1", "stars": 5},
)
def rate_ride(world: World, a: Rate) -> Ride:
    """Rate a completed ride from 1 to 5 stars."""
    _ride(world, a.ride_id, "completed")
    return world.patch("rides", "rides", a.ride_id, rating=a.stars)
