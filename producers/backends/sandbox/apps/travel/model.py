"""Flights from the home city, hotels per city, and existing bookings."""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder, at, day

HOME_CITY = "Home City"


class Flight(TypedDict):
    id: str
    origin: str
    destination: str
    depart: str
    arrive: str
    airline: str
    price: float
    stops: int


class Hotel(TypedDict):
    id: str
    name: str
    city: str
    nightly: float
    rating: float
    breakfast: bool


class Booking(TypedDict):
    id: str
    kind: Literal["flight", "hotel"]
    ref: str
    check_in: str
    nights: int
    total: float
    status: Literal["confirmed", "cancelled", "checked_in"]


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    flights, hotels = {}, {}
    n = 0
    for city in s.pool.cities:
        for d in (1, 3, 5):
            for airline in s.sample(("SkyJet", "AeroBlue", "Polar Air", "Sunwing"), 3):
                n += 1
                hour = s.rng.randrange(6, 20)
                flights[f"fl_{n}"] = Flight(
                    id=f"fl_{n}",
                    origin=HOME_CITY,
                    destination=city,
                    depart=at(d, hour),
                    arrive=at(d, min(hour + s.rng.randrange(2, 5), 23)),
                    airline=airline,
                    price=s.money(60, 400),
                    stops=s.rng.randrange(0, 2),
                )
        for j, venue in enumerate(s.sample(s.pool.venues, 3), start=1):
            hid = f"htl_{city.lower()}_{j}"
            hotels[hid] = Hotel(
                id=hid,
                name=f"Hotel {venue} {city}",
                city=city,
                nightly=s.money(60, 260),
                rating=round(s.rng.uniform(3.0, 4.9), 1),
                breakfast=s.rng.random() < 0.5,
            )
    hotel = next(iter(hotels.values()))
    bookings = {
        "bk_1": Booking(
            id="bk_1",
            kind="hotel",
            ref=hotel["id"],
            check_in=day(9),
            nights=2,
            total=round(hotel["nightly"] * 2, 2),
            status="confirmed",
        )
    }
    return {"flights": flights, "hotels": hotels, "bookings": bookings}
