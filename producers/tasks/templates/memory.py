"""Memory templates: the goal names the user's world indirectly; the facts live only in harness memory."""

from __future__ import annotations

import math
from collections import Counter

from bus_schemas.actions import Finish, MemoryRead
from producers.tasks.template import Ctx, Instance, Solver, Template, call, equals, exists, memory, only, pay
from producers.tasks.templates.tool_use import WALLET_PATHS

ALIASES = (
    "sister",
    "brother",
    "best friend",
    "landlord",
    "accountant",
    "personal trainer",
    "cousin",
    "babysitter",
    "neighbour",
)


def _people(ctx: Ctx, n: int) -> list[dict]:
    return ctx.rng.sample(ctx.rows("contacts", "contacts"), n)


def _aliased(ctx: Ctx) -> tuple[dict, str, list[str]]:
    """A contact, the alias the user calls them by, and that fact among distractor facts."""
    people = _people(ctx, 3)
    aliases = ctx.rng.sample(ctx.part(ALIASES), 3)
    facts = [f"{p['name']} is my {a}." for p, a in zip(people, aliases, strict=True)]
    return people[0], aliases[0], facts


def text_relation(ctx: Ctx) -> Instance:
    person, alias, facts = _aliased(ctx)

    def solve() -> Solver:
        yield MemoryRead(query=f"who is my {alias}")
        found = yield call("contacts.search_contacts", query=person["name"])
        yield call("messages.send", contact_id=found.result[0]["id"], text="I'm running late, sorry!")
        yield Finish(answer="Sent.")

    return Instance(
        goal=f"Text my {alias} that I'm running late.",
        criteria=[
            exists(
                "texted",
                "an outgoing text to the right person mentioning being late",
                "/messages/messages",
                {"contact_id": person["id"], "direction": "out", "text__contains": "late"},
            ),
            only("/messages/messages"),
        ],
        solve=solve,
        memories=memory(*facts),
    )


def wake_alarm(ctx: Ctx) -> Instance:
    time = ctx.pick(ctx.part([f"{h:02d}:{m:02d}" for h in (4, 5) for m in range(0, 60, 5)]))

    def solve() -> Solver:
        yield MemoryRead(query="what time do I wake up on weekdays")
        yield call("clock.set_alarm", time=time, label="Wake up", days=["mon", "tue", "wed", "thu", "fri"])
        yield Finish(answer="Alarm set.")

    return Instance(
        goal="Set my usual weekday wake-up alarm.",
        criteria=[
            exists(
                "alarm_set", "an enabled alarm at the remembered time", "/clock/alarms", {"time": time, "enabled": True}
            ),
            only("/clock/alarms"),
        ],
        solve=solve,
        memories=memory(f"On weekdays I wake up at {time}.", "I like my coffee black.", "I go to bed around 23:00."),
    )


def usual_order(ctx: Ctx) -> Instance:
    dishes = ctx.rows("food", "dishes")
    namesakes = Counter((d["restaurant_id"], d["name"]) for d in dishes)
    # Available dishes that the remembered name picks out: a menu may list two "Summer Wrap"s.
    orderable = [d for d in dishes if d["available"] and namesakes[d["restaurant_id"], d["name"]] == 1]
    served = {d["restaurant_id"] for d in orderable}
    rest = ctx.pick([r for r in ctx.rows("food", "restaurants") if r["open"] and r["id"] in served])
    dish = ctx.pick([d for d in orderable if d["restaurant_id"] == rest["id"]])

    def solve() -> Solver:
        yield MemoryRead(query=f"my usual order at {rest['name']}")
        found = yield call("food.search_restaurants", query=rest["name"])
        menu = yield call("food.menu", restaurant_id=found.result[0]["id"])
        yield call("food.add_to_cart", item_id=next(d["id"] for d in menu.result if d["name"] == dish["name"]))
        yield call("food.checkout", confirm=True)
        yield Finish(answer="Ordered.")

    return Instance(
        goal=f"Order my usual from {rest['name']}.",
        criteria=[
            exists(
                "ordered",
                "a placed order for the remembered dish",
                "/food/orders",
                {"total__approx": round(dish["price"] + 3.5, 2), "status": "placed"},
            ),
            only("/food/orders", "/food/cart"),
        ],
        solve=solve,
        memories=memory(
            f"My usual order at {rest['name']} is the {dish['name']}.",
            f"I am allergic to {ctx.pick(('peanuts', 'shellfish', 'kiwi'))}.",
        ),
    )


def ride_to_gym(ctx: Ctx) -> Instance:
    venues = [p for p in ctx.rows("maps", "places") if p["category"] not in ("home", "work", "residence", "airport")]
    gym = ctx.pick([p for p in venues if p["category"] == "gym"] or venues)

    def solve() -> Solver:
        yield MemoryRead(query="where is my gym")
        found = yield call("maps.search_places", query=gym["name"])
        ride = yield call("rides.request_ride", pickup_id="pl_1", dropoff_id=found.result[0]["id"], product="comfort")
        yield call("rides.confirm_pickup", id=ride.result["id"])
        yield Finish(answer="Ride confirmed.")

    return Instance(
        goal="Book me a comfort ride from home to my gym.",
        criteria=[
            exists(
                "ride_confirmed",
                "a confirmed comfort ride to the remembered gym",
                "/rides/rides",
                {"pickup": "pl_1", "dropoff": gym["id"], "product": "comfort", "status": "confirmed"},
            ),
            only("/rides/rides"),
        ],
        solve=solve,
        fixtures={"/settings/permissions/rides.location": True},
        memories=memory(f"I work out at {gym['name']}.", "My office is the Work place in maps."),
    )


def hotel_prefs(ctx: Ctx) -> Instance:
    city = ctx.pick(sorted({h["city"] for h in ctx.rows("travel", "hotels")}))
    hotels = sorted(
        (h for h in ctx.rows("travel", "hotels") if h["city"] == city), key=lambda h: (h["nightly"], h["id"])
    )
    chosen = ctx.pick(hotels)
    fixtures = {
        f"/travel/hotels/{h['id']}": {
            **h,
            "breakfast": h is chosen or (h["nightly"] > chosen["nightly"] and h["breakfast"]),
        }
        for h in hotels
    }
    budget = math.ceil(chosen["nightly"]) + 5
    nights, check_in = ctx.rng.randrange(1, 5), ctx.pick(("2026-03-06", "2026-03-13", "2026-03-20"))

    def solve() -> Solver:
        yield MemoryRead(query="my hotel preferences")
        found = yield call("travel.search_hotels", city=city)
        fit = [h for h in found.result if h["breakfast"] and h["nightly"] <= budget]
        yield call("travel.book_hotel", hotel_id=fit[0]["id"], check_in=check_in, nights=nights, confirm=True)
        yield Finish(answer=f"Booked {fit[0]['name']}.")

    return Instance(
        goal=f"Book me {nights} night(s) in {city} from {check_in}, following my hotel preferences; take the cheapest "
        "hotel that fits them.",
        criteria=[
            exists(
                "booked",
                "the cheapest hotel matching the remembered preferences",
                "/travel/bookings",
                {"kind": "hotel", "ref": chosen["id"], "nights": nights, "check_in": check_in, "status": "confirmed"},
            ),
            only("/travel/bookings"),
        ],
        solve=solve,
        fixtures=fixtures,
        memories=memory(
            "I only stay at hotels that serve breakfast.",
            f"I never pay more than ${budget} a night for a hotel.",
            "I prefer aisle seats on flights.",
        ),
    )


def owe_money(ctx: Ctx) -> Instance:
    person, alias, facts = _aliased(ctx)
    amount = round(ctx.rng.uniform(10, 90), 2)
    thing = ctx.pick(("the concert", "the ski trip", "groceries", "the birthday cake"))

    def solve() -> Solver:
        yield MemoryRead(query=f"what do I owe my {alias}")
        yield MemoryRead(query=f"who is my {alias}")
        yield from pay(person["name"], amount, thing)
        yield Finish(answer="Paid back.")

    return Instance(
        goal=f"Pay back what I owe my {alias}.",
        criteria=[
            exists(
                "paid",
                "a completed payment of the remembered amount to the right person",
                "/wallet/transactions",
                {"contact_id": person["id"], "amount__approx": -amount},
            ),
            only(*WALLET_PATHS),
        ],
        solve=solve,
        memories=memory(*facts, f"I owe my {alias} ${amount:.2f} for {thing}."),
    )


TEMPLATES: tuple[Template, ...] = (
    Template(
        "mem.text_relation",
        "memory",
        1,
        ("information_acquisition", "argument_grounding"),
        ("contacts", "messages"),
        text_relation,
    ),
    Template("mem.wake_alarm", "memory", 1, ("information_acquisition", "argument_grounding"), ("clock",), wake_alarm),
    Template(
        "mem.usual_order",
        "memory",
        2,
        ("information_acquisition", "multi_step_dependency", "verified_completion"),
        ("food",),
        usual_order,
    ),
    Template(
        "mem.ride_to_gym",
        "memory",
        2,
        ("information_acquisition", "multi_step_dependency"),
        ("maps", "rides"),
        ride_to_gym,
    ),
    Template(
        "mem.hotel_prefs",
        "memory",
        3,
        ("information_acquisition", "argument_grounding", "verified_completion"),
        ("travel",),
        hotel_prefs,
    ),
    Template(
        "mem.owe_money",
        "memory",
        3,
        ("information_acquisition", "multi_step_dependency", "verified_completion"),
        ("contacts", "wallet"),
        owe_money,
    ),
)


def workout_playlist(ctx: Ctx) -> Instance:
    names = ctx.rng.sample(
        ctx.part(("Pump", "Cardio Mix", "Run Club", "Sweat", "Power Hour", "Beast Mode", "Tempo", "Lift", "Sprint")), 3
    )
    tracks = sorted(ctx.world["music"]["tracks"])
    fixtures = {
        f"/music/playlists/pls_9{i}": {"id": f"pls_9{i}", "name": name, "track_ids": ctx.rng.sample(tracks, 3)}
        for i, name in enumerate(names)
    }
    first = fixtures["/music/playlists/pls_90"]["track_ids"][0]

    def solve() -> Solver:
        yield MemoryRead(query="my workout playlist")
        found = yield call("music.search_playlists", query=names[0])
        yield call("music.play_playlist", id=found.result[0]["id"])
        yield Finish(answer="Playing.")

    return Instance(
        goal="Play my workout playlist.",
        criteria=[
            equals(
                "playing",
                "the remembered playlist is playing",
                "/music/player/state",
                where={"track_id": first, "playing": True},
            ),
            only("/music/player"),
        ],
        solve=solve,
        fixtures=fixtures,
        memories=memory(
            f"My workout playlist is '{names[0]}'.", f"'{names[1]}' is my partner's playlist, don't use it."
        ),
    )


TEMPLATES += (
    Template(
        "mem.workout_playlist", "memory", 1, ("information_acquisition", "tool_routing"), ("music",), workout_playlist
    ),
)
