"""Travel tools: search flights and hotels, book (with confirmation), cancel, check in."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import Field

from producers.backends.sandbox.apps.travel.model import Booking, Flight, Hotel
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, IdArgs
from producers.backends.sandbox.seeding import TODAY, parse_day
from producers.backends.sandbox.world import World

TOOLS = AppTools("travel")
TOOLS.collection("bookings", Booking, noun="booking", search=("kind", "ref", "status"), example_id="bk_1")
TOOLS.records.update(flights=Flight, hotels=Hotel)


class FlightQuery(Args):
    destination: str = Field(min_length=2)
    day: date
    max_stops: int = Field(1, ge=0, le=3)


class HotelQuery(Args):
    city: str = Field(min_length=2)
    min_rating: float = Field(0.0, ge=0, le=5)


class BookFlight(Args):
    flight_id: str
    confirm: bool = Field(False, description="Must be true to book; without it you get the price to confirm.")


class BookHotel(Args):
    hotel_id: str
    check_in: date
    nights: int = Field(ge=1, le=30)
    confirm: bool = False


def _confirm(confirm: bool, what: str, total: float) -> None:
    if not confirm:
        raise ToolFailure("needs_confirmation", f"{what} costs {total:.2f}; call again with confirm=true to book")


def _book(
    world: World, kind: Literal["flight", "hotel"], ref: str, check_in: str, nights: int, total: float
) -> Booking:
    bid = world.new_id("travel", "bookings", "bk")
    return world.put(
        "travel",
        "bookings",
        bid,
        Booking(
            id=bid, kind=kind, ref=ref, check_in=check_in, nights=nights, total=round(total, 2), status="confirmed"
        ),
    )


def _booking(world: World, booking_id: str) -> Booking:
    return world.get("travel", "bookings", booking_id, "booking")


@TOOLS.tool(example={"destination": "Lisbon", "day": "2026-03-03"})
def search_flights(world: World, a: FlightQuery) -> list[Flight]:
    """Flights from home to a city on a day, cheapest first."""
    hits = [
        f
        for f in world.table("travel", "flights").values()
        if f["destination"].lower() == a.destination.lower()
        and f["depart"].startswith(a.day.isoformat())
        and f["stops"] <= a.max_stops
    ]
    return sorted(hits, key=lambda f: (f["price"], f["id"]))


@TOOLS.tool(errors={"not_found": "no such flight"}, example={"id": "fl_1"})
def get_flight(world: World, a: IdArgs) -> Flight:
    """One flight by id."""
    return world.get("travel", "flights", a.id, "flight")


@TOOLS.tool(example={"city": "Lisbon"})
def search_hotels(world: World, a: HotelQuery) -> list[Hotel]:
    """Hotels in a city with at least a rating, cheapest first."""
    hits = [
        h
        for h in world.table("travel", "hotels").values()
        if h["city"].lower() == a.city.lower() and h["rating"] >= a.min_rating
    ]
    return sorted(hits, key=lambda h: (h["nightly"], h["id"]))


@TOOLS.tool(errors={"not_found": "no such hotel"}, example={"id": "htl_lisbon_1"})
def get_hotel(world: World, a: IdArgs) -> Hotel:
    """One hotel by id."""
    return world.get("travel", "hotels", a.id, "hotel")


@TOOLS.tool(
    writes=True,
    errors={
        "not_found": "no such flight",
        "needs_confirmation": "called without confirm=true",
        "conflict": "the flight is already booked",
    },
    example={"flight_id": "fl_2", "confirm": True},
)
def book_flight(world: World, a: BookFlight) -> Booking:
    """Book a flight. Needs confirm=true."""
    flight = world.get("travel", "flights", a.flight_id, "flight")
    if any(b["ref"] == a.flight_id and b["status"] != "cancelled" for b in world.table("travel", "bookings").values()):
        raise ToolFailure("conflict", f"flight {a.flight_id} is already booked")
    _confirm(a.confirm, f"flight {a.flight_id}", flight["price"])
    return _book(world, "flight", a.flight_id, flight["depart"][:10], 0, flight["price"])


@TOOLS.tool(
    writes=True,
    errors={
        "not_found": "no such hotel",
        "needs_confirmation": "called without confirm=true",
        "invalid_argument": "check-in date in the past",
    },
    example={"hotel_id": "htl_lisbon_1", "check_in": "2026-03-05", "nights": 2, "confirm": True},
)
def book_hotel(world: World, a: BookHotel) -> Booking:
    """Book hotel nights. Needs confirm=true."""
    hotel = world.get("travel", "hotels", a.hotel_id, "hotel")
    if a.check_in < TODAY:
        raise ToolFailure("invalid_argument", f"check-in {a.check_in} is in the past")
    total = hotel["nightly"] * a.nights
    _confirm(a.confirm, f"{a.nights} night(s) at {hotel['name']}", total)
    return _book(world, "hotel", a.hotel_id, a.check_in.isoformat(), a.nights, total)


@TOOLS.tool(
    writes=True, errors={"not_found": "no such booking", "conflict": "not a confirmed booking"}, example={"id": "bk_1"}
)
def cancel_booking(world: World, a: IdArgs) -> Booking:
    """Cancel a confirmed booking."""
    if _booking(world, a.id)["status"] != "confirmed":
        raise ToolFailure("conflict", f"booking {a.id} is not confirmed")
    return world.patch("travel", "bookings", a.id, status="cancelled")


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such booking", "conflict": "not a confirmed flight departing within 48 hours"},
    example={"id": "bk_2"},
)
def check_in(world: World, a: IdArgs) -> Booking:
    """Check in for a flight departing within the next 48 hours."""
    booking = _booking(world, a.id)
    if (
        booking["kind"] != "flight"
        or booking["status"] != "confirmed"
        or (parse_day(booking["check_in"]) - TODAY).days > 2
    ):
        raise ToolFailure("conflict", f"booking {a.id} is not a confirmed flight departing within 48 hours")
    return world.patch("travel", "bookings", a.id, status="checked_in")
