"""Tool-use templates: route to the right app, ground arguments, chain calls, recover from errors."""

from __future__ import annotations

from bus_schemas.actions import Finish
from producers.tasks.template import (
    Ctx,
    Instance,
    Solver,
    Template,
    answer,
    call,
    equals,
    exists,
    looked_up,
    only,
    pay,
)
from producers.tasks.templates.lookups import messages_with, weather_on


def update_phone(ctx: Ctx) -> Instance:
    person = ctx.pick(ctx.rows("contacts", "contacts"))
    new = f"+1-555-{ctx.rng.randrange(1000, 9999)}"
    path = f"/contacts/contacts/{person['id']}"

    def solve() -> Solver:
        found = yield call("contacts.search_contacts", query=person["name"])
        yield call("contacts.update_phone", contact_id=found.result[0]["id"], phone=new)
        yield Finish(answer="Updated.")

    return Instance(
        goal=f"{person['name']} has a new phone number, {new}. Update their contact card.",
        criteria=[equals("phone_updated", "the contact has the new number", path, where={"phone": new}), only(path)],
        solve=solve,
    )


def set_alarm(ctx: Ctx) -> Instance:
    time = f"{ctx.pick(ctx.part(range(10, 23))):02d}:{ctx.pick(('05', '20', '35', '50'))}"
    label = ctx.pick(("Pick up kids", "Take medicine", "Call mom", "Water plants", "Stretch"))

    def solve() -> Solver:
        yield call("clock.set_alarm", time=time, label=label)
        yield Finish(answer="Alarm set.")

    return Instance(
        goal=f"Set an alarm for {time} labelled '{label}'.",
        criteria=[
            exists(
                "alarm_set",
                "an enabled alarm at that time with that label",
                "/clock/alarms",
                {"time": time, "label": label, "enabled": True},
            ),
            only("/clock/alarms"),
        ],
        solve=solve,
    )


def weather_high(ctx: Ctx) -> Instance:
    f = ctx.pick([r for r in ctx.rows("weather", "forecasts") if r["date"] > ctx.world["system"]["device"]["now"][:10]])

    def solve() -> Solver:
        obs = yield call("weather.on_day", city=f["city"], day=f["date"])
        yield Finish(answer=f"{obs.result['high_c']} °C")

    return Instance(
        goal=f"What will the high temperature be in {f['city']} on {f['date']}? Answer in °C.",
        criteria=[
            answer([str(f["high_c"])], "numeric", 0.0),
            looked_up(
                "weather", f"{f['city']}'s forecast for {f['date']} was looked up", *weather_on(f["city"], f["date"])
            ),
            only(),
        ],
        solve=solve,
    )


def email_to_calendar(ctx: Ctx) -> Instance:
    person = ctx.pick(ctx.rows("contacts", "contacts"))
    subject = ctx.pick(("budget", "launch", "garden", "roadmap", "hiring", "offsite"))
    topic = f"{subject} {ctx.pick(('plan', 'review', 'sync', 'kickoff'))}"
    day = ctx.pick(("2026-03-04", "2026-03-05", "2026-03-06", "2026-03-09", "2026-03-10"))
    email = {
        "id": "em_90",
        "sender": person["email"],
        "to": ["me@mail.test"],
        "subject": f"Meeting about the {topic}",
        "body": f"Hi! Can we meet on {day} at 20:00 to discuss the {topic}?",
        "at": "2026-03-01T18:00",
        "folder": "inbox",
        "read": False,
        "starred": False,
    }
    where = {"title__contains": topic, "start": f"{day}T20:00", "end": f"{day}T21:00", "attendees__has": person["id"]}

    def solve() -> Solver:
        found = yield call("email.search_emails", query=topic)
        mail = found.result[0]
        who = yield call("contacts.search_contacts", query=mail["sender"])
        yield call(
            "calendar.create_event",
            title=topic.title(),
            start=f"{day}T20:00",
            end=f"{day}T21:00",
            attendees=[who.result[0]["id"]],
        )
        yield Finish(answer="Added to your calendar.")

    return Instance(
        goal=f"{person['name']} emailed me to propose a meeting about the {topic}. Put it in my calendar at the "
        f"proposed time for one hour, titled '{topic.title()}', with them invited.",
        criteria=[
            exists(
                "event_created",
                "the meeting is on the calendar at the proposed time with the sender",
                "/calendar/events",
                where,
            ),
            only("/calendar/events"),
        ],
        solve=solve,
        fixtures={"/email/emails/em_90": email},
    )


WALLET_PATHS = ("/wallet/payments", "/wallet/transactions", "/wallet/account")


def pay_contact(ctx: Ctx) -> Instance:
    person = ctx.pick(ctx.rows("contacts", "contacts"))
    amount = round(ctx.rng.uniform(5, 80), 2)
    note = ctx.pick(("concert tickets", "groceries", "taxi", "birthday gift", "dinner"))

    def solve() -> Solver:
        yield from pay(person["name"], amount, note)
        yield Finish(answer="Paid.")

    return Instance(
        goal=f"Pay {person['name']} ${amount:.2f} for the {note}.",
        criteria=[
            exists(
                "paid",
                "a completed transaction to the contact for the amount",
                "/wallet/transactions",
                {"contact_id": person["id"], "amount__approx": -amount},
            ),
            only(*WALLET_PATHS),
        ],
        solve=solve,
    )


def unread_from(ctx: Ctx) -> Instance:
    messages = ctx.rows("messages", "messages")
    cid = ctx.pick(sorted({m["contact_id"] for m in messages}))
    person = ctx.world["contacts"]["contacts"][cid]
    count = sum(1 for m in messages if m["contact_id"] == cid and not m["read"])

    def solve() -> Solver:
        found = yield call("contacts.search_contacts", query=person["name"])
        convo = yield call("messages.conversation", contact_id=found.result[0]["id"])
        yield Finish(answer=str(sum(1 for m in convo.result if not m["read"])))

    return Instance(
        goal=f"How many unread messages do I have from {person['name']}? Answer with a number.",
        criteria=[
            answer([str(count)], "numeric", 0.0),
            looked_up("messages", f"the messages with {person['name']} were looked up", *messages_with(cid)),
            only(),
        ],
        solve=solve,
    )


def ride_to_contact(ctx: Ctx) -> Instance:
    person = ctx.pick(ctx.rows("contacts", "contacts"))
    product = ctx.pick(("economy", "comfort", "xl"))
    place = next(p for p in ctx.rows("maps", "places") if p["address"] == person["address"])

    def solve() -> Solver:
        found = yield call("contacts.search_contacts", query=person["name"])
        spot = yield call("maps.geocode", address=found.result[0]["address"])
        ride = yield call("rides.request_ride", pickup_id="pl_1", dropoff_id=spot.result["id"], product=product)
        if ride.error is not None and ride.error.code == "permission_denied":
            yield call("settings.grant_permission", permission="rides.location")
            ride = yield call("rides.request_ride", pickup_id="pl_1", dropoff_id=spot.result["id"], product=product)
        yield call("rides.confirm_pickup", id=ride.result["id"])
        yield Finish(answer="Your ride is confirmed.")

    return Instance(
        goal=f"Get me a {product} ride from home to {person['name']}'s place.",
        criteria=[
            exists(
                "ride_confirmed",
                "a confirmed ride home -> the contact's address",
                "/rides/rides",
                {"pickup": "pl_1", "dropoff": place["id"], "product": product, "status": "confirmed"},
            ),
            only("/rides/rides", "/settings/permissions/rides.location"),
        ],
        solve=solve,
        fixtures={"/settings/permissions/rides.location": False},
    )


def cheapest_product(ctx: Ctx) -> Instance:
    item = ctx.pick(sorted({p["name"].split()[-1] for p in ctx.rows("shopping", "products")}))
    qty = ctx.rng.randrange(1, 4)
    fits = [
        p
        for p in ctx.rows("shopping", "products")
        if p["name"].endswith(item) and p["available"] and p["rating"] >= 3.5
    ]
    min_rating = 3.5 if fits else 0.0
    best = min(
        fits or [p for p in ctx.rows("shopping", "products") if p["name"].endswith(item) and p["available"]],
        key=lambda p: (p["price"], p["id"]),
    )

    def solve() -> Solver:
        found = yield call("shopping.cheapest", query=item, min_rating=min_rating)
        yield call("shopping.add_to_cart", item_id=found.result["id"], qty=qty)
        summary = yield call("shopping.checkout")
        if summary.error is not None and summary.error.code == "needs_confirmation":
            yield call("shopping.checkout", confirm=True)
        yield Finish(answer="Ordered.")

    rated = f" rated at least {min_rating}" if min_rating else ""
    return Instance(
        goal=f"Buy {qty} of the cheapest available {item}{rated}.",
        criteria=[
            exists(
                "ordered",
                "a placed order for that quantity of the right product",
                "/shopping/orders",
                {"total__approx": round(best["price"] * qty, 2), "status": "placed"},
            ),
            only("/shopping/orders", "/shopping/cart"),
        ],
        solve=solve,
    )


TEMPLATES: tuple[Template, ...] = (
    Template("tu.update_phone", "tool_use", 1, ("argument_grounding", "tool_routing"), ("contacts",), update_phone),
    Template("tu.set_alarm", "tool_use", 1, ("tool_routing", "verified_completion"), ("clock",), set_alarm),
    Template("tu.weather_high", "tool_use", 1, ("information_acquisition",), ("weather",), weather_high),
    Template(
        "tu.email_to_calendar",
        "tool_use",
        2,
        ("information_acquisition", "multi_step_dependency", "argument_grounding"),
        ("email", "contacts", "calendar"),
        email_to_calendar,
    ),
    Template(
        "tu.pay_contact",
        "tool_use",
        2,
        ("multi_step_dependency", "verified_completion"),
        ("contacts", "wallet"),
        pay_contact,
    ),
    Template(
        "tu.unread_from",
        "tool_use",
        2,
        ("information_acquisition", "state_tracking"),
        ("contacts", "messages"),
        unread_from,
    ),
    Template(
        "tu.ride_to_contact",
        "tool_use",
        3,
        ("recovery", "multi_step_dependency", "argument_grounding"),
        ("contacts", "maps", "rides", "settings"),
        ride_to_contact,
    ),
    Template(
        "tu.cheapest_product",
        "tool_use",
        3,
        ("information_acquisition", "recovery", "verified_completion"),
        ("shopping",),
        cheapest_product,
    ),
)


def reminder_due(ctx: Ctx) -> Instance:
    verb = ctx.pick(("Renew", "Cancel", "Book", "Return", "Pay"))
    things = ("passport", "gym pass", "library books", "car service", "insurance", "dentist visit", "parking permit")
    title = f"{verb} the {ctx.pick(ctx.part((*things, 'phone plan', 'rent')))}"
    due = ctx.pick(("2026-03-05", "2026-03-09", "2026-03-12", "2026-03-16"))

    def solve() -> Solver:
        yield call("reminders.create_reminder", title=title, due=due, priority=3)
        yield Finish(answer="Reminder created.")

    return Instance(
        goal=f"Remind me to {title[0].lower() + title[1:]} on {due}, high priority.",
        criteria=[
            exists(
                "reminder",
                "an open high-priority reminder due that day",
                "/reminders/reminders",
                {"title__contains": title, "due": due, "priority": 3, "done": False},
            ),
            only("/reminders/reminders"),
        ],
        solve=solve,
    )


def callback_voicemail(ctx: Ctx) -> Instance:
    person = ctx.pick(ctx.rows("contacts", "contacts"))
    topic = ctx.pick(
        ctx.part(
            [
                f"{a} {b}"
                for a in ("plumbing", "school", "birthday", "car", "invoice", "lease")
                for b in ("question", "problem", "plans", "paperwork")
            ]
        )
    )
    voicemail = {
        "id": "vm_90",
        "number": person["phone"],
        "contact_id": person["id"],
        "at": "2026-03-02T08:10",
        "transcript": f"Hi, call me back about the {topic}.",
        "heard": False,
    }
    fixtures = {"/phone/voicemails/vm_90": voicemail, "/settings/permissions/phone.calls": False}

    def solve() -> Solver:
        found = yield call("phone.search_voicemails", query=topic)
        vm = found.result[0]
        dialled = yield call("phone.call", contact_id=vm["contact_id"])
        if dialled.error is not None and dialled.error.code == "permission_denied":
            yield call("settings.grant_permission", permission="phone.calls")
            yield call("phone.call", contact_id=vm["contact_id"])
        yield call("phone.mark_voicemail_heard", id=vm["id"])
        yield Finish(answer="Called back.")

    return Instance(
        goal=f"Call back whoever left me a voicemail about the {topic}, then mark that voicemail as heard.",
        criteria=[
            exists(
                "called",
                "an outgoing call to the caller",
                "/phone/calls",
                {"contact_id": person["id"], "direction": "outgoing"},
            ),
            equals("heard", "the voicemail is marked heard", "/phone/voicemails/vm_90", where={"heard": True}),
            only("/phone/calls", "/phone/voicemails/vm_90", "/settings/permissions/phone.calls"),
        ],
        solve=solve,
        fixtures=fixtures,
    )


TEMPLATES += (
    Template("tu.reminder_due", "tool_use", 1, ("argument_grounding",), ("reminders",), reminder_due),
    Template(
        "tu.callback_voicemail",
        "tool_use",
        3,
        ("information_acquisition", "recovery", "multi_step_dependency"),
        ("phone", "contacts", "settings"),
        callback_voicemail,
    ),
)
