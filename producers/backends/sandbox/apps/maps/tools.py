"""Maps tools: find places, directions and travel times, saved places, location sharing."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from typing_extensions import TypedDict

from producers.backends.sandbox.apps.common import require_permission
from producers.backends.sandbox.apps.maps.model import SPEED_KMH, Place, distance_km
from producers.backends.sandbox.apps.messages.model import Message
from producers.backends.sandbox.apps.messages.tools import send_text
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, NoArgs
from producers.backends.sandbox.world import World

TOOLS = AppTools("maps")
TOOLS.collection("places", Place, noun="place", search=("name", "address", "category"), example_id="pl_1")
TOOLS.flag(
    "places",
    "saved",
    Place,
    noun="place",
    on=("save_place", "Add a place to saved places."),
    off=("unsave_place", "Remove a place from saved places."),
    example_id="pl_3",
)

Mode = Literal["driving", "transit", "walking", "cycling"]


class Route(TypedDict):
    origin: str
    destination: str
    mode: str
    distance_km: float
    duration_min: int


class RouteArgs(Args):
    origin_id: str = Field(description="Place id of the start.")
    destination_id: str
    mode: Mode = "driving"


class AddressArgs(Args):
    address: str = Field(min_length=3, max_length=200)


class Nearby(Args):
    place_id: str
    category: str
    radius_km: float = Field(3.0, gt=0, le=50)


class ShareEta(Args):
    contact_id: str
    destination_id: str


def place(world: World, place_id: str) -> Place:
    return world.get("maps", "places", place_id, "place")


def route(world: World, origin_id: str, destination_id: str, mode: str) -> Route:
    a, b = place(world, origin_id), place(world, destination_id)
    km = distance_km(a, b)
    return Route(
        origin=a["id"],
        destination=b["id"],
        mode=mode,
        distance_km=km,
        duration_min=max(1, round(km / SPEED_KMH[mode] * 60)),
    )


@TOOLS.tool(errors={"not_found": "no such place"}, example={"origin_id": "pl_1", "destination_id": "pl_2"})
def directions(world: World, a: RouteArgs) -> Route:
    """Distance and travel time between two places for a mode of transport."""
    return route(world, a.origin_id, a.destination_id, a.mode)


@TOOLS.tool(errors={"not_found": "no such place"}, example={"origin_id": "pl_1", "destination_id": "pl_2"})
def compare_modes(world: World, a: RouteArgs) -> list[Route]:
    """Travel time for every mode between two places (the mode argument is ignored)."""
    return [route(world, a.origin_id, a.destination_id, m) for m in SPEED_KMH]


@TOOLS.tool(errors={"not_found": "no place has that address"}, example={"address": "1 Airport Rd"})
def geocode(world: World, a: AddressArgs) -> Place:
    """Find the place at a street address (e.g. a contact's address)."""
    needle = a.address.lower().strip()
    for p in world.table("maps", "places").values():
        if p["address"].lower() == needle:
            return p
    raise ToolFailure("not_found", f"no place at {a.address!r}")


@TOOLS.tool(errors={"not_found": "no such place"}, example={"place_id": "pl_1", "category": "cafe", "radius_km": 10})
def nearby(world: World, a: Nearby) -> list[Place]:
    """Places of a category within a radius of a place, nearest first."""
    center = place(world, a.place_id)
    hits = [
        p
        for p in world.table("maps", "places").values()
        if p["category"] == a.category and p["id"] != center["id"] and distance_km(center, p) <= a.radius_km
    ]
    return sorted(hits, key=lambda p: (distance_km(center, p), p["id"]))


@TOOLS.tool()
def list_saved(world: World, a: NoArgs) -> list[Place]:
    """Saved places (Home and Work are saved by default)."""
    return [p for p in world.table("maps", "places").values() if p["saved"]]


@TOOLS.tool(errors={"permission_denied": "maps.location permission not granted"})
def current_location(world: World, a: NoArgs) -> Place:
    """Where the phone is now."""
    require_permission(world, "maps.location")
    return place(world, "pl_1")


@TOOLS.tool(
    writes=True,
    errors={
        "not_found": "no such place or contact",
        "permission_denied": "maps.location permission not granted",
        "conflict": "the contact is blocked",
    },
    example={"contact_id": "c_1", "destination_id": "pl_2"},
)
def share_eta(world: World, a: ShareEta) -> Message:
    """Text a contact your driving ETA from here to a destination."""
    require_permission(world, "maps.location")
    eta = route(world, "pl_1", a.destination_id, "driving")
    return send_text(
        world, a.contact_id, f"On my way to {place(world, a.destination_id)['name']}, ETA {eta['duration_min']} min"
    )
