"""Sub-agent templates: independent look-ups over several options (one sub-goal each), then act on the best."""

from __future__ import annotations

from typing import Any

from bus_schemas.actions import Finish
from producers.backends.sandbox.apps.maps.model import distance_km
from producers.tasks.template import (
    Ctx,
    Instance,
    NoInstance,
    Solver,
    Template,
    answer,
    call,
    equals,
    exists,
    looked_up,
    only,
)
from producers.tasks.templates.lookups import route_from_home, weather_on
from producers.tasks.templates.tool_use import WALLET_PATHS


def _distinct(ctx: Ctx, rows: list[dict], key: str, n: int) -> list[dict]:
    """n rows whose ``key`` values are pairwise different, so "the best" is unambiguous; :class:`NoInstance` when the
    rows hold fewer than n different values."""
    for _ in range(50):
        picked = ctx.rng.sample(rows, n)
        if len({r[key] for r in picked}) == n:
            return picked
    first: dict[Any, dict] = {}  # 50 random draws missed (few distinct values): one row per value, n values at random
    for row in rows:
        first.setdefault(row[key], row)
    if len(first) < n:
        raise NoInstance(f"no {n} rows with distinct {key}")
    return [first[value] for value in ctx.rng.sample(sorted(first), n)]


def warmest_city(ctx: Ctx) -> Instance:
    day = ctx.pick(("2026-03-03", "2026-03-04", "2026-03-05"))
    options = _distinct(ctx, [f for f in ctx.rows("weather", "forecasts") if f["date"] == day], "high_c", 3)
    best = max(options, key=lambda f: f["high_c"])
    cities = [f["city"] for f in options]

    def solve() -> Solver:
        highs = {}
        for city in cities:
            obs = yield call("weather.on_day", city=city, day=day)
            highs[city] = obs.result["high_c"]
        yield Finish(answer=max(highs, key=highs.__getitem__))

    return Instance(
        goal=f"Which of {', '.join(cities)} will be warmest on {day}? Answer with the city name.",
        criteria=[
            answer([best["city"]], "normalized"),
            *(
                looked_up(f"weather_{i}", f"{city}'s forecast for {day} was looked up", *weather_on(city, day))
                for i, city in enumerate(cities, 1)
            ),
            only(),
        ],
        solve=solve,
    )


def closest_place(ctx: Ctx) -> Instance:
    home = ctx.world["maps"]["places"]["pl_1"]
    venues = [
        dict(p, d=distance_km(home, p))
        for p in ctx.rows("maps", "places")
        if p["category"] not in ("home", "work", "residence", "airport")
    ]
    options = _distinct(ctx, venues, "d", 3)
    best = min(options, key=lambda p: p["d"])

    def solve() -> Solver:
        dist = {}
        for p in options:
            found = yield call("maps.search_places", query=p["name"])
            route = yield call("maps.directions", origin_id="pl_1", destination_id=found.result[0]["id"])
            dist[p["name"]] = route.result["distance_km"]
        yield Finish(answer=min(dist, key=dist.__getitem__))

    return Instance(
        goal=f"Which is closest to my home: {', '.join(p['name'] for p in options)}? Answer with its name.",
        criteria=[
            answer([best["name"]], "normalized"),
            *(
                looked_up(f"distance_{i}", f"the way from home to {p['name']} was looked up", *route_from_home(p["id"]))
                for i, p in enumerate(options, 1)
            ),
            only(),
        ],
        solve=solve,
    )


def best_restaurant_order(ctx: Ctx) -> Instance:
    open_ = [r for r in ctx.rows("food", "restaurants") if r["open"]]
    cuisines = ctx.rng.sample(sorted({r["cuisine"] for r in open_}), 2)
    best = min((r for r in open_ if r["cuisine"] in cuisines), key=lambda r: (-r["rating"], r["id"]))
    dishes = sorted(
        (d for d in ctx.rows("food", "dishes") if d["restaurant_id"] == best["id"] and d["available"]),
        key=lambda d: (d["price"], d["id"]),
    )
    veg = [d for d in dishes if d["vegetarian"]] or dishes[-1:]
    fixtures = {f"/food/dishes/{veg[0]['id']}": {**veg[0], "vegetarian": True}}
    target = veg[0]

    def solve() -> Solver:
        candidates = []
        for cuisine in cuisines:
            obs = yield call("food.by_cuisine", cuisine=cuisine)
            candidates += obs.result
        top = min(candidates, key=lambda r: (-r["rating"], r["id"]))
        menu = yield call("food.menu", restaurant_id=top["id"], vegetarian_only=True)
        dish = min((d for d in menu.result if d["available"]), key=lambda d: (d["price"], d["id"]))
        yield call("food.add_to_cart", item_id=dish["id"])
        yield call("food.checkout", confirm=True)
        yield Finish(answer=f"Ordered {dish['name']} from {top['name']}.")

    return Instance(
        goal=f"Compare the open {cuisines[0]} and {cuisines[1]} restaurants, pick the best rated one (lowest id on "
        "ties), and order its cheapest available vegetarian dish.",
        criteria=[
            exists(
                "ordered",
                "one order of the right dish from the best restaurant",
                "/food/orders",
                {"total__approx": round(target["price"] + 3.5, 2), "status": "placed"},
            ),
            only("/food/orders", "/food/cart"),
        ],
        solve=solve,
        fixtures=fixtures,
    )


def cheapest_hotel_two_cities(ctx: Ctx) -> Instance:
    cities = ctx.rng.sample(sorted({h["city"] for h in ctx.rows("travel", "hotels")}), 2)
    hotels = [h for h in ctx.rows("travel", "hotels") if h["city"] in cities]
    anchor = ctx.pick(hotels)
    fixtures = {f"/travel/hotels/{anchor['id']}": {**anchor, "rating": max(anchor["rating"], 4.2)}}
    rated = [h for h in hotels if h["id"] == anchor["id"] or h["rating"] >= 4.0]
    best = min(rated, key=lambda h: (h["nightly"], h["id"]))
    nights, check_in = ctx.rng.randrange(1, 4), ctx.pick(("2026-03-07", "2026-03-14", "2026-03-21"))

    def solve() -> Solver:
        pool = []
        for city in cities:
            obs = yield call("travel.search_hotels", city=city, min_rating=4.0)
            pool += obs.result
        pick = min(pool, key=lambda h: (h["nightly"], h["id"]))
        yield call("travel.book_hotel", hotel_id=pick["id"], check_in=check_in, nights=nights, confirm=True)
        yield Finish(answer=f"Booked {pick['name']}.")

    return Instance(
        goal=f"I can stay in either {cities[0]} or {cities[1]}. Book the cheapest hotel rated 4.0 or higher across "
        f"both cities for {nights} night(s) from {check_in}.",
        criteria=[
            exists(
                "booked",
                "the cheapest well-rated hotel over both cities",
                "/travel/bookings",
                {"kind": "hotel", "ref": best["id"], "nights": nights, "check_in": check_in},
            ),
            only("/travel/bookings"),
        ],
        solve=solve,
        fixtures=fixtures,
    )


def dry_destination(ctx: Ctx) -> Instance:
    day = ctx.pick(("2026-03-03", "2026-03-05", "2026-03-07"))
    options = _distinct(ctx, [f for f in ctx.rows("weather", "forecasts") if f["date"] == day], "rain_pct", 2)
    city = min(options, key=lambda f: f["rain_pct"])["city"]
    flight = min(
        (f for f in ctx.rows("travel", "flights") if f["destination"] == city and f["depart"].startswith(day)),
        key=lambda f: (f["price"], f["id"]),
    )
    friend = ctx.pick(ctx.rows("contacts", "contacts"))

    def solve() -> Solver:
        rain = {}
        for f in options:
            obs = yield call("weather.on_day", city=f["city"], day=day)
            rain[f["city"]] = obs.result["rain_pct"]
        dest = min(rain, key=rain.__getitem__)
        found = yield call("travel.search_flights", destination=dest, day=day, max_stops=3)
        yield call("travel.book_flight", flight_id=found.result[0]["id"], confirm=True)
        who = yield call("contacts.search_contacts", query=friend["name"])
        yield call("messages.send", contact_id=who.result[0]["id"], text=f"I'm going to {dest} on {day}!")
        yield Finish(answer=dest)

    return Instance(
        goal=f"On {day} I'll fly to either {options[0]['city']} or {options[1]['city']}, whichever has the lower "
        "chance of rain that day. Book the cheapest flight there (any number of stops) and text "
        f"{friend['name']} which city I picked.",
        criteria=[
            exists(
                "booked",
                "the cheapest flight to the drier city",
                "/travel/bookings",
                {"kind": "flight", "ref": flight["id"]},
            ),
            exists(
                "told",
                "the friend was told the city",
                "/messages/messages",
                {"contact_id": friend["id"], "direction": "out", "text__contains": city},
            ),
            only("/travel/bookings", "/messages/messages"),
        ],
        solve=solve,
    )


def settle_requests(ctx: Ctx) -> Instance:
    requests = sorted(ctx.rows("wallet", "requests"), key=lambda r: r["id"])
    amounts = ctx.rng.sample(range(8, 90), len(requests))
    fixtures = {
        f"/wallet/requests/{r['id']}": {**r, "amount": float(a)} for r, a in zip(requests, amounts, strict=True)
    }
    smallest = min(zip(requests, amounts, strict=True), key=lambda ra: ra[1])[0]

    def solve() -> Solver:
        listed = yield call("wallet.list_requests")
        open_ = [r for r in listed.result if r["status"] == "open"]
        low = min(open_, key=lambda r: r["amount"])
        staged = yield call("wallet.pay_request", id=low["id"])
        yield call("wallet.confirm_payment", id=staged.result["id"])
        for r in open_:
            if r["id"] != low["id"]:
                yield call("wallet.decline_request", id=r["id"])
        yield Finish(answer="Done.")

    others = [
        equals(
            f"declined_{r['id']}",
            f"request {r['id']} declined",
            f"/wallet/requests/{r['id']}",
            where={"status": "declined"},
        )
        for r in requests
        if r is not smallest
    ]
    return Instance(
        goal="Several people sent me money requests. Pay the smallest open one and decline all the others.",
        criteria=[
            equals(
                "paid_request",
                "the smallest request is paid",
                f"/wallet/requests/{smallest['id']}",
                where={"status": "paid"},
            ),
            exists(
                "money_sent",
                "the money actually left the account",
                "/wallet/transactions",
                {"contact_id": smallest["contact_id"], "amount__approx": -float(amounts[requests.index(smallest)])},
            ),
            *others,
            only("/wallet/requests", *WALLET_PATHS),
        ],
        solve=solve,
        fixtures=fixtures,
    )


TEMPLATES: tuple[Template, ...] = (
    Template("sa.warmest_city", "sub_agent", 1, ("information_acquisition",), ("weather",), warmest_city),
    Template(
        "sa.closest_place", "sub_agent", 1, ("information_acquisition", "argument_grounding"), ("maps",), closest_place
    ),
    Template(
        "sa.best_restaurant_order",
        "sub_agent",
        2,
        ("information_acquisition", "multi_step_dependency"),
        ("food",),
        best_restaurant_order,
    ),
    Template(
        "sa.cheapest_hotel_two_cities",
        "sub_agent",
        2,
        ("information_acquisition", "verified_completion"),
        ("travel",),
        cheapest_hotel_two_cities,
    ),
    Template(
        "sa.dry_destination",
        "sub_agent",
        3,
        ("information_acquisition", "multi_step_dependency", "argument_grounding"),
        ("weather", "travel", "contacts", "messages"),
        dry_destination,
    ),
    Template(
        "sa.settle_requests",
        "sub_agent",
        3,
        ("state_tracking", "multi_step_dependency", "verified_completion"),
        ("wallet",),
        settle_requests,
    ),
)


def ride_or_transit(ctx: Ctx) -> Instance:
    home = ctx.world["maps"]["places"]["pl_1"]
    place = ctx.pick(
        [p for p in ctx.rows("maps", "places") if p["category"] not in ("home", "work", "airport", "residence")]
    )
    transit_min = max(1, round(distance_km(home, place) / 20.0 * 60))
    take_transit = transit_min <= 40

    def solve() -> Solver:
        spot = yield call("maps.search_places", query=place["name"])
        pid = spot.result[0]["id"]
        route = yield call("maps.directions", origin_id="pl_1", destination_id=pid, mode="transit")
        if route.result["duration_min"] <= 40:
            yield Finish(answer="transit")
            return
        quotes = yield call("rides.estimate", pickup_id="pl_1", dropoff_id=pid)
        cheapest = min(quotes.result, key=lambda q: q["fare"])
        ride = yield call("rides.request_ride", pickup_id="pl_1", dropoff_id=pid, product=cheapest["product"])
        yield call("rides.confirm_pickup", id=ride.result["id"])
        yield Finish(answer="ride")

    ride = [
        exists(
            "ride",
            "the cheapest ride is confirmed",
            "/rides/rides",
            {"pickup": "pl_1", "dropoff": place["id"], "product": "economy", "status": "confirmed"},
        )
    ]
    return Instance(
        goal=f"I need to get from home to {place['name']}. If public transit takes 40 minutes or less, book nothing "
        "and answer 'transit'; otherwise book the cheapest ride product and answer 'ride'.",
        criteria=[
            *([] if take_transit else ride),
            answer(["transit" if take_transit else "ride"]),
            looked_up("transit_time", "the transit time was looked up", *route_from_home(place["id"], mode="transit")),
            only() if take_transit else only("/rides/rides"),
        ],
        solve=solve,
        fixtures={"/settings/permissions/rides.location": True},
    )


TEMPLATES += (
    Template(
        "sa.ride_or_transit",
        "sub_agent",
        3,
        ("information_acquisition", "multi_step_dependency", "verified_completion"),
        ("maps", "rides"),
        ride_or_transit,
    ),
)
