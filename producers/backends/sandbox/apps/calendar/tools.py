"""Calendar tools: create and edit events, attendees, invites, reminders, day views and free slots."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from pydantic import Field, model_validator

from producers.backends.sandbox.apps.calendar.model import Event
from producers.backends.sandbox.apps.common import contact
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, IdArgs
from producers.backends.sandbox.world import World

TOOLS = AppTools("calendar")
TOOLS.collection("events", Event, noun="event", search=("title", "location"), example_id="evt_1", delete=True)
TOOLS.members(
    "events",
    "attendees",
    Event,
    noun="event",
    owner_arg="event_id",
    member_arg="contact_id",
    add=("add_attendee", "Invite a contact to an event."),
    remove=("remove_attendee", "Remove a contact from an event."),
    example={"event_id": "evt_1", "contact_id": "c_20"},
    member_of=("contacts", "contacts", "contact"),
)


class Slot(Args):
    start: datetime = Field(description="Start, ISO 8601 local time, e.g. 2026-03-03T14:00.")
    end: datetime

    @model_validator(mode="after")
    def _ordered(self) -> Slot:
        if self.end <= self.start:
            raise ValueError("end must be after start")
        return self


class NewEvent(Slot):
    title: str = Field(min_length=1, max_length=120)
    location: str = ""
    attendees: list[str] = Field(default_factory=list, description="Contact ids.")
    allow_overlap: bool = Field(False, description="Create even if it overlaps another confirmed event.")


class Reschedule(Slot):
    event_id: str
    allow_overlap: bool = False


class Rename(Args):
    event_id: str
    title: str = Field(min_length=1, max_length=120)


class Reminder(Args):
    event_id: str
    minutes_before: int = Field(ge=0, le=10080)


class Day(Args):
    day: date


class FreeSlots(Args):
    day: date
    duration_min: int = Field(60, ge=15, le=480)


def _iso(value: datetime) -> str:
    return value.isoformat(timespec="minutes")


def _check_overlap(world: World, start: str, end: str, skip: str = "") -> None:
    for e in world.table("calendar", "events").values():
        if e["id"] != skip and e["status"] == "confirmed" and e["start"] < end and start < e["end"]:
            raise ToolFailure(
                "conflict",
                f"overlaps {e['id']} {e['title']!r} ({e['start']}-{e['end']}); pass allow_overlap=true to keep both",
            )


def _event(world: World, event_id: str) -> Event:
    return world.get("calendar", "events", event_id, "event")


def _respond(world: World, event_id: str, status: str) -> Event:
    if _event(world, event_id)["status"] != "invited":
        raise ToolFailure("conflict", f"event {event_id} is not a pending invitation")
    return world.patch("calendar", "events", event_id, status=status)


_NF = {"not_found": "no such event"}


@TOOLS.tool(
    writes=True,
    errors={"conflict": "overlaps a confirmed event", "not_found": "an attendee is not a contact"},
    example={"title": "Coffee", "start": "2026-03-20T07:00", "end": "2026-03-20T07:30"},
)
def create_event(world: World, a: NewEvent) -> Event:
    """Create a confirmed event; attendees are contact ids."""
    for cid in a.attendees:
        contact(world, cid)
    start, end = _iso(a.start), _iso(a.end)
    if not a.allow_overlap:
        _check_overlap(world, start, end)
    eid = world.new_id("calendar", "events", "evt")
    return world.put(
        "calendar",
        "events",
        eid,
        Event(
            id=eid,
            title=a.title,
            start=start,
            end=end,
            location=a.location,
            attendees=list(a.attendees),
            status="confirmed",
            reminder_min=0,
        ),
    )


@TOOLS.tool(
    writes=True,
    errors={**_NF, "conflict": "the new time overlaps a confirmed event"},
    example={"event_id": "evt_1", "start": "2026-03-21T07:00", "end": "2026-03-21T08:00"},
)
def reschedule(world: World, a: Reschedule) -> Event:
    """Move an event to a new time."""
    _event(world, a.event_id)
    start, end = _iso(a.start), _iso(a.end)
    if not a.allow_overlap:
        _check_overlap(world, start, end, skip=a.event_id)
    return world.patch("calendar", "events", a.event_id, start=start, end=end)


@TOOLS.tool(writes=True, errors=_NF, example={"event_id": "evt_1", "title": "Renamed"})
def rename_event(world: World, a: Rename) -> Event:
    """Change an event's title."""
    _event(world, a.event_id)
    return world.patch("calendar", "events", a.event_id, title=a.title)


@TOOLS.tool(writes=True, errors={**_NF, "conflict": "not a pending invitation"}, example={"id": "evt_4"})
def accept_invite(world: World, a: IdArgs) -> Event:
    """Accept an invitation (status becomes confirmed)."""
    return _respond(world, a.id, "confirmed")


@TOOLS.tool(writes=True, errors={**_NF, "conflict": "not a pending invitation"}, example={"id": "evt_4"})
def decline_invite(world: World, a: IdArgs) -> Event:
    """Decline an invitation."""
    return _respond(world, a.id, "declined")


@TOOLS.tool(writes=True, errors=_NF, example={"event_id": "evt_1", "minutes_before": 15})
def set_reminder(world: World, a: Reminder) -> Event:
    """Get notified some minutes before an event (0 turns it off)."""
    _event(world, a.event_id)
    return world.patch("calendar", "events", a.event_id, reminder_min=a.minutes_before)


@TOOLS.tool(example={"day": "2026-03-03"})
def list_day(world: World, a: Day) -> list[Event]:
    """Events on one day, in time order."""
    prefix = a.day.isoformat()
    return sorted(
        (e for e in world.table("calendar", "events").values() if e["start"].startswith(prefix)),
        key=lambda e: (e["start"], e["id"]),
    )


@TOOLS.tool(example={"day": "2026-03-03", "duration_min": 60})
def find_free_slots(world: World, a: FreeSlots) -> list[str]:
    """Start times between 08:00 and 20:00 on a day where a slot of that length is free (30-minute grid)."""
    busy = [(e["start"], e["end"]) for e in list_day(world, Day(day=a.day)) if e["status"] == "confirmed"]
    day_start = datetime.combine(a.day, datetime.min.time()).replace(hour=8)
    slots = []
    for step in range(0, 24):
        start = day_start + timedelta(minutes=30 * step)
        end = start + timedelta(minutes=a.duration_min)
        if end.hour > 20 or (end.hour == 20 and end.minute > 0) or end.date() != a.day:
            break
        if all(not (b0 < _iso(end) and _iso(start) < b1) for b0, b1 in busy):
            slots.append(_iso(start))
    return slots
