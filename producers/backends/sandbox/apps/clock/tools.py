"""Clock tools: alarms, timers, world clocks."""

from __future__ import annotations

from pydantic import Field, field_validator

from producers.backends.sandbox.apps.clock.model import DAYS, Alarm, Timer, WorldClock
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, IdArgs, NoArgs
from producers.backends.sandbox.seeding import NOW
from producers.backends.sandbox.world import World

TOOLS = AppTools("clock")
TOOLS.collection("alarms", Alarm, noun="alarm", search=("label", "time"), example_id="al_1", delete=True)
TOOLS.records.update(timers=Timer, world_clocks=WorldClock)
TOOLS.flag(
    "alarms",
    "enabled",
    Alarm,
    noun="alarm",
    on=("enable_alarm", "Turn an alarm on."),
    off=("disable_alarm", "Turn an alarm off."),
    example_id="al_2",
)

HHMM = Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$", description="24-hour time HH:MM.")


class NewAlarm(Args):
    time: str = HHMM
    label: str = Field("Alarm", max_length=60)
    days: list[str] = Field(default_factory=list, description=f"Repeat days from {DAYS}; empty = once.")

    @field_validator("days")
    @classmethod
    def _days(cls, value: list[str]) -> list[str]:
        unknown = set(value) - set(DAYS)
        if unknown:
            raise ValueError(f"unknown days {sorted(unknown)}")
        return value


class AlarmTime(Args):
    alarm_id: str
    time: str = HHMM


class NewTimer(Args):
    minutes: int = Field(ge=1, le=1440)
    label: str = Field("Timer", max_length=60)


class City(Args):
    city: str = Field(min_length=2, max_length=60)


def _alarm(world: World, alarm_id: str) -> Alarm:
    return world.get("clock", "alarms", alarm_id, "alarm")


def _same_time(world: World, time: str, skip: str = "") -> None:
    for alarm in world.table("clock", "alarms").values():
        if alarm["time"] == time and alarm["id"] != skip:
            raise ToolFailure("conflict", f"alarm {alarm['id']} is already set for {time}; enable or edit it instead")


_NF = {"not_found": "no such alarm"}


@TOOLS.tool(
    writes=True,
    errors={"conflict": "an alarm already exists at that time"},
    example={"time": "04:10", "label": "Flight"},
)
def set_alarm(world: World, a: NewAlarm) -> Alarm:
    """Create an enabled alarm."""
    _same_time(world, a.time)
    aid = world.new_id("clock", "alarms", "al")
    return world.put("clock", "alarms", aid, Alarm(id=aid, time=a.time, label=a.label, days=list(a.days), enabled=True))


@TOOLS.tool(
    writes=True,
    errors={**_NF, "conflict": "another alarm is at that time"},
    example={"alarm_id": "al_1", "time": "04:20"},
)
def change_alarm_time(world: World, a: AlarmTime) -> Alarm:
    """Move an alarm to a new time."""
    _alarm(world, a.alarm_id)
    _same_time(world, a.time, skip=a.alarm_id)
    return world.patch("clock", "alarms", a.alarm_id, time=a.time)


@TOOLS.tool(writes=True, example={"minutes": 10, "label": "Tea"})
def start_timer(world: World, a: NewTimer) -> Timer:
    """Start a countdown timer."""
    tid = world.new_id("clock", "timers", "tm")
    return world.put("clock", "timers", tid, Timer(id=tid, label=a.label, minutes=a.minutes, running=True))


@TOOLS.tool(writes=True, errors={"not_found": "no such timer"}, example={"id": "tm_1"})
def cancel_timer(world: World, a: IdArgs) -> Timer:
    """Stop and remove a timer."""
    world.get("clock", "timers", a.id, "timer")
    return world.delete("clock", "timers", a.id)


@TOOLS.tool()
def list_timers(world: World, a: NoArgs) -> list[Timer]:
    """Running timers."""
    return list(world.table("clock", "timers").values())


@TOOLS.tool()
def now(world: World, a: NoArgs) -> str:
    """The phone's current local date and time (ISO 8601)."""
    return NOW.isoformat(timespec="minutes")


@TOOLS.tool(writes=True, errors={"conflict": "the city is already shown"}, example={"city": "Tokyo"})
def add_world_clock(world: World, a: City) -> WorldClock:
    """Show a city's time on the world clock."""
    if any(c["city"].lower() == a.city.lower() for c in world.table("clock", "world_clocks").values()):
        raise ToolFailure("conflict", f"{a.city} is already on the world clock")
    wid = world.new_id("clock", "world_clocks", "wc")
    return world.put("clock", "world_clocks", wid, WorldClock(id=wid, city=a.city))


@TOOLS.tool(writes=True, errors={"not_found": "no such world clock"}, example={"id": "wc_1"})
def remove_world_clock(world: World, a: IdArgs) -> WorldClock:
    """Remove a city from the world clock."""
    world.get("clock", "world_clocks", a.id, "world clock")
    return world.delete("clock", "world_clocks", a.id)


@TOOLS.tool()
def list_world_clocks(world: World, a: NoArgs) -> list[WorldClock]:
    """Cities on the world clock."""
    return list(world.table("clock", "world_clocks").values())
