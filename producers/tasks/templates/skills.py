"""Skills templates: multi-step procedures that a skill document (``sandbox/skills/*.md``) spells out."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from bus_schemas.actions import Finish, SkillLoad
from producers.tasks.template import Ctx, Instance, Solver, Template, answer, call, equals, exists, looked_up, only
from producers.tasks.templates.lookups import weather_on


def join_wifi(ctx: Ctx) -> Instance:
    net = ctx.world["settings"]["networks"]["net_2"]
    password = f"{net['ssid'].lower()}-{ctx.rng.randrange(1000, 9999)}"
    note = {
        "id": "note_90",
        "title": f"{net['ssid']} wifi",
        "body": f"password: {password}",
        "folder": "personal",
        "tags": [],
        "pinned": False,
    }
    fixtures = {
        "/settings/values/wifi": False,
        "/settings/networks/net_2": {**net, "password": password},
        "/notes/notes/note_90": note,
    }

    def solve() -> Solver:
        yield SkillLoad(name="join_wifi")
        found = yield call("notes.search_notes", query=net["ssid"])
        secret = found.result[0]["body"].split("password: ")[1]
        yield call("settings.set_wifi", on=True)
        networks = yield call("settings.list_networks")
        network_id = next(n["id"] for n in networks.result if n["ssid"] == net["ssid"])
        yield call("settings.join_network", network_id=network_id, password=secret)
        yield Finish(answer="Connected.")

    return Instance(
        goal=f"Connect the phone to the {net['ssid']} wifi. The password is somewhere in my notes.",
        criteria=[
            equals("joined", "connected to the network", "/settings/networks/net_2", where={"connected": True}),
            equals("wifi_on", "wifi is on", "/settings/values/wifi", value=True),
            only("/settings/values/wifi", "/settings/networks"),
        ],
        solve=solve,
        fixtures=fixtures,
    )


def focus_session(ctx: Ctx) -> Instance:
    minutes = ctx.pick(ctx.part(range(15, 121, 5)))

    def solve() -> Solver:
        yield SkillLoad(name="focus_session")
        yield call("settings.set_do_not_disturb", on=True)
        yield call("settings.set_ring_volume", level=0)
        yield call("clock.start_timer", minutes=minutes, label="Focus")
        yield Finish(answer="Focus session started.")

    return Instance(
        goal=f"Start a {minutes}-minute focus session.",
        criteria=[
            equals("dnd", "do-not-disturb is on", "/settings/values/do_not_disturb", value=True),
            equals("silent", "the ringer is muted", "/settings/values/ring_volume", value=0),
            exists(
                "timer",
                "a focus timer of that length runs",
                "/clock/timers",
                {"minutes": minutes, "label__contains": "focus", "running": True},
            ),
            only("/settings/values/do_not_disturb", "/settings/values/ring_volume", "/clock/timers"),
        ],
        solve=solve,
        fixtures={"/settings/values/do_not_disturb": False, "/settings/values/ring_volume": 70},
    )


def share_eta(ctx: Ctx) -> Instance:
    person = ctx.pick(ctx.rows("contacts", "contacts"))
    place = ctx.pick([p for p in ctx.rows("maps", "places") if p["category"] not in ("home", "residence")])

    def solve() -> Solver:
        yield SkillLoad(name="share_eta")
        yield call("settings.grant_permission", permission="maps.location")
        spot = yield call("maps.search_places", query=place["name"])
        who = yield call("contacts.search_contacts", query=person["name"])
        yield call("maps.share_eta", contact_id=who.result[0]["id"], destination_id=spot.result[0]["id"])
        yield Finish(answer="Shared.")

    return Instance(
        goal=f"Let {person['name']} know when I'll get to {place['name']}.",
        criteria=[
            exists(
                "eta_sent",
                "the contact got an ETA text for that place",
                "/messages/messages",
                {"contact_id": person["id"], "direction": "out", "text__contains": place["name"]},
            ),
            only("/messages/messages", "/settings/permissions/maps.location"),
        ],
        solve=solve,
        fixtures={"/settings/permissions/maps.location": False},
    )


def expense_receipts(ctx: Ctx) -> Instance:
    manager = ctx.pick(ctx.rows("contacts", "contacts"))
    receipts = sorted(e["id"] for e in ctx.rows("email", "emails") if e["folder"] == "receipts")
    subjects = {e["id"]: e["subject"] for e in ctx.rows("email", "emails")}
    criteria = [
        exists(
            f"fwd_{r}",
            f"receipt {r} forwarded to the manager",
            "/email/emails",
            {"subject": f"Fwd: {subjects[r]}", "to__has": manager["email"], "folder": "sent"},
        )
        for r in receipts
    ]
    criteria += [
        equals(f"archived_{r}", f"receipt {r} archived", f"/email/emails/{r}", where={"folder": "archive"})
        for r in receipts
    ]

    def solve() -> Solver:
        yield SkillLoad(name="expense_receipts")
        folder = yield call("email.list_folder", folder="receipts")
        for mail in folder.result:
            yield call("email.forward", email_id=mail["id"], to=manager["email"])
            yield call("email.archive", id=mail["id"])
        yield Finish(answer=f"Forwarded and archived {len(folder.result)} receipts.")

    return Instance(
        goal=f"File my expenses: send every receipt in my receipts folder to {manager['name']} ({manager['email']}) "
        "and archive them afterwards.",
        criteria=[*criteria, only("/email/emails")],
        solve=solve,
    )


def dinner_invite(ctx: Ctx) -> Instance:
    person = ctx.pick(ctx.rows("contacts", "contacts"))
    rest = ctx.pick(ctx.rows("food", "restaurants"))
    day = ctx.pick(("2026-03-04", "2026-03-06", "2026-03-07", "2026-03-11", "2026-03-13"))
    first = person["name"].split()[0]

    def solve() -> Solver:
        yield SkillLoad(name="dinner_invite")
        who = yield call("contacts.search_contacts", query=person["name"])
        cid = who.result[0]["id"]
        event = yield call(
            "calendar.create_event",
            title=f"Dinner with {first}",
            start=f"{day}T19:00",
            end=f"{day}T21:00",
            location=rest["name"],
            attendees=[cid],
        )
        yield call("calendar.set_reminder", event_id=event.result["id"], minutes_before=60)
        yield call("messages.send", contact_id=cid, text=f"Dinner at {rest['name']} on {day} at 19:00?")
        yield Finish(answer="Invited.")

    where = {
        "title__contains": "dinner",
        "start": f"{day}T19:00",
        "end": f"{day}T21:00",
        "attendees__has": person["id"],
        "location__contains": rest["name"],
        "reminder_min": 60,
    }
    return Instance(
        goal=f"Invite {person['name']} to dinner at {rest['name']} on {day} at 19:00.",
        criteria=[
            exists(
                "event",
                "a two-hour dinner event with the guest, place and a 1-hour reminder",
                "/calendar/events",
                where,
            ),
            exists(
                "invite_text",
                "the guest got a text naming the restaurant",
                "/messages/messages",
                {"contact_id": person["id"], "direction": "out", "text__contains": rest["name"]},
            ),
            only("/calendar/events", "/messages/messages"),
        ],
        solve=solve,
    )


def trip_prep(ctx: Ctx) -> Instance:
    alarm_times = {a["time"] for a in ctx.rows("clock", "alarms")}

    def fits(f: dict) -> bool:
        return (
            f["stops"] == 0
            and (datetime.fromisoformat(f["depart"]) - timedelta(hours=3)).strftime("%H:%M") not in alarm_times
        )

    flights = ctx.rows("travel", "flights")
    firsts: dict[tuple[str, str], dict[str, Any]] = {}
    for f in sorted(flights, key=lambda f: (f["price"], f["id"])):
        if f["stops"] == 0:
            firsts.setdefault((f["destination"], f["depart"][:10]), f)
    flight = ctx.pick([f for f in firsts.values() if fits(f)])
    city, day = flight["destination"], flight["depart"][:10]
    alarm = (datetime.fromisoformat(flight["depart"]) - timedelta(hours=3)).strftime("%H:%M")
    fc = ctx.world["weather"]["forecasts"][f"{city}|{day}"]
    rain = "yes" if fc["rain_pct"] >= 50 or fc["condition"] in ("rain", "storm") else "no"

    def solve() -> Solver:
        yield SkillLoad(name="trip_prep")
        found = yield call("travel.search_flights", destination=city, day=day, max_stops=0)
        best = found.result[0]
        yield call("travel.book_flight", flight_id=best["id"], confirm=True)
        yield call(
            "calendar.create_event",
            title=f"Flight to {city}",
            start=best["depart"],
            end=best["arrive"],
            allow_overlap=True,
        )
        yield call("clock.set_alarm", time=alarm, label=f"Flight to {city}")
        wet = yield call("weather.will_it_rain", city=city, day=day)
        yield Finish(answer="yes" if wet.result else "no")

    return Instance(
        goal=f"I'm flying to {city} on {day}. Book the cheapest nonstop flight that day, put it in my calendar, set "
        "an alarm 3 hours before departure, and tell me whether it will rain there that day (yes or no).",
        criteria=[
            exists(
                "booked",
                "the cheapest nonstop flight is booked",
                "/travel/bookings",
                {"kind": "flight", "ref": flight["id"], "status": "confirmed"},
            ),
            exists(
                "calendar",
                "the flight is in the calendar",
                "/calendar/events",
                {"start": flight["depart"], "title__contains": city},
            ),
            exists("alarm", "an alarm 3 hours before departure", "/clock/alarms", {"time": alarm, "enabled": True}),
            answer([rain], "normalized"),
            looked_up("weather", f"the weather in {city} on {day} was looked up", *weather_on(city, day, rain=True)),
            only("/travel/bookings", "/calendar/events", "/clock/alarms"),
        ],
        solve=solve,
    )


TEMPLATES: tuple[Template, ...] = (
    Template(
        "sk.join_wifi",
        "skills",
        1,
        ("information_acquisition", "multi_step_dependency"),
        ("notes", "settings"),
        join_wifi,
        ("join_wifi",),
    ),
    Template(
        "sk.focus_session",
        "skills",
        1,
        ("multi_step_dependency", "verified_completion"),
        ("settings", "clock"),
        focus_session,
        ("focus_session",),
    ),
    Template(
        "sk.share_eta",
        "skills",
        2,
        ("recovery", "multi_step_dependency", "argument_grounding"),
        ("contacts", "maps", "settings"),
        share_eta,
        ("share_eta",),
    ),
    Template(
        "sk.expense_receipts",
        "skills",
        2,
        ("state_tracking", "multi_step_dependency"),
        ("email",),
        expense_receipts,
        ("expense_receipts",),
    ),
    Template(
        "sk.dinner_invite",
        "skills",
        3,
        ("multi_step_dependency", "argument_grounding", "verified_completion"),
        ("contacts", "calendar", "messages", "food"),
        dinner_invite,
        ("dinner_invite",),
    ),
    Template(
        "sk.trip_prep",
        "skills",
        3,
        ("multi_step_dependency", "information_acquisition", "state_tracking"),
        ("travel", "calendar", "clock", "weather"),
        trip_prep,
        ("trip_prep",),
    ),
)


def share_photos(ctx: Ctx) -> Instance:
    person = ctx.pick(ctx.rows("contacts", "contacts"))
    city = ctx.pick(sorted({p["city"] for p in ctx.rows("photos", "photos")}))
    shots = sorted(p["id"] for p in ctx.rows("photos", "photos") if p["city"] == city)
    sent = [
        exists(
            f"sent_{pid}",
            f"photo {pid} was sent",
            "/messages/messages",
            {"contact_id": person["id"], "direction": "out", "text__contains": f"photo {pid}"},
        )
        for pid in shots
    ]

    def solve() -> Solver:
        yield SkillLoad(name="share_photos")
        yield call("settings.grant_permission", permission="messages.photos")
        who = yield call("contacts.search_contacts", query=person["name"])
        found = yield call("photos.search_photos", query=city, limit=100)
        for photo in found.result:
            if photo["city"] == city:
                yield call("photos.share_photo", photo_id=photo["id"], contact_id=who.result[0]["id"])
        yield Finish(answer="Shared.")

    return Instance(
        goal=f"Send {person['name']} all my photos taken in {city}.",
        criteria=[*sent, only("/messages/messages", "/settings/permissions/messages.photos")],
        solve=solve,
        fixtures={"/settings/permissions/messages.photos": False},
    )


def build_playlist(ctx: Ctx) -> Instance:
    tracks = ctx.rows("music", "tracks")
    artist = ctx.pick(sorted({t["artist"] for t in tracks}))
    wanted = sorted(t["id"] for t in tracks if t["artist"] == artist)
    name = f"Best of {artist}"

    def solve() -> Solver:
        yield SkillLoad(name="build_playlist")
        created = yield call("music.create_playlist", name=name)
        songs = yield call("music.by_artist", artist=artist)
        for track in songs.result:
            yield call("music.add_to_playlist", playlist_id=created.result["id"], track_id=track["id"])
        yield Finish(answer=f"Added {len(songs.result)} tracks.")

    return Instance(
        goal=f"Make a playlist called '{name}' with every {artist} track in my library.",
        criteria=[
            exists(
                "playlist",
                "a new playlist with exactly the artist's tracks",
                "/music/playlists",
                {"name": name, "track_ids__set": wanted},
            ),
            only("/music/playlists"),
        ],
        solve=solve,
    )


TEMPLATES += (
    Template(
        "sk.share_photos",
        "skills",
        2,
        ("recovery", "state_tracking", "multi_step_dependency"),
        ("contacts", "photos", "settings"),
        share_photos,
        ("share_photos",),
    ),
    Template(
        "sk.build_playlist",
        "skills",
        2,
        ("state_tracking", "multi_step_dependency"),
        ("music",),
        build_playlist,
        ("build_playlist",),
    ),
)
