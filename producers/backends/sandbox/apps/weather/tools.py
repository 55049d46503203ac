"""Weather tools: today, multi-day forecast, rain and air-quality checks, saved cities."""

from __future__ import annotations

from datetime import date

from pydantic import Field
from typing_extensions import TypedDict

from producers.backends.sandbox.apps.weather.model import Forecast
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, NoArgs
from producers.backends.sandbox.seeding import TODAY
from producers.backends.sandbox.world import World

TOOLS = AppTools("weather")
TOOLS.records.update(forecasts=Forecast)


class City(Args):
    city: str = Field(min_length=2, max_length=60)


class CityDays(City):
    days: int = Field(3, ge=1, le=7)


class CityDay(City):
    day: date


class Alert(TypedDict):
    city: str
    date: str
    message: str


def _days(world: World, city: str) -> list[Forecast]:
    rows = [f for f in world.table("weather", "forecasts").values() if f["city"].lower() == city.lower()]
    if not rows:
        raise ToolFailure("not_found", f"no weather data for {city!r}")
    return sorted(rows, key=lambda f: f["date"])


def _on(world: World, city: str, when: date) -> Forecast:
    for f in _days(world, city):
        if f["date"] == when.isoformat():
            return f
    raise ToolFailure("not_found", f"no forecast for {city} on {when} (7 days ahead at most)")


_NF = {"not_found": "unknown city"}


@TOOLS.tool(errors=_NF, example={"city": "Lisbon"})
def today(world: World, a: City) -> Forecast:
    """Today's weather in a city."""
    return _on(world, a.city, TODAY)


@TOOLS.tool(errors=_NF, example={"city": "Lisbon", "days": 3})
def forecast(world: World, a: CityDays) -> list[Forecast]:
    """Daily forecast for the next days."""
    return _days(world, a.city)[: a.days]


@TOOLS.tool(errors={"not_found": "unknown city or date out of range"}, example={"city": "Lisbon", "day": "2026-03-04"})
def on_day(world: World, a: CityDay) -> Forecast:
    """Forecast for one day (up to a week ahead)."""
    return _on(world, a.city, a.day)


@TOOLS.tool(errors={"not_found": "unknown city or date out of range"}, example={"city": "Lisbon", "day": "2026-03-04"})
def will_it_rain(world: World, a: CityDay) -> bool:
    """True when rain probability is 50% or more (or the condition is rain/storm)."""
    f = _on(world, a.city, a.day)
    return f["rain_pct"] >= 50 or f["condition"] in ("rain", "storm")


@TOOLS.tool(errors=_NF, example={"city": "Lisbon"})
def alerts(world: World, a: City) -> list[Alert]:
    """Severe-weather and air-quality alerts for the week."""
    out = []
    for f in _days(world, a.city):
        if f["condition"] in ("storm", "snow") or f["aqi"] > 150:
            out.append(Alert(city=f["city"], date=f["date"], message=f"{f['condition']}, AQI {f['aqi']}"))
    return out


@TOOLS.tool()
def saved_cities(world: World, a: NoArgs) -> list[str]:
    """Cities saved in the weather app."""
    return sorted(world.table("weather", "saved"))


@TOOLS.tool(writes=True, errors={**_NF, "conflict": "already saved"}, example={"city": "Lisbon"})
def save_city(world: World, a: City) -> list[str]:
    """Save a city."""
    city = _days(world, a.city)[0]["city"]
    if world.find("weather", "saved", city):
        raise ToolFailure("conflict", f"{city} is already saved")
    world.put("weather", "saved", city, {"city": city})
    return sorted(world.table("weather", "saved"))


@TOOLS.tool(writes=True, errors={"not_found": "the city is not saved"}, example={"city": "Lisbon"})
def unsave_city(world: World, a: City) -> list[str]:
    """Remove a saved city."""
    match = next((c for c in world.table("weather", "saved") if c.lower() == a.city.lower()), None)
    if match is None:
        raise ToolFailure("not_found", f"{a.city} is not saved")
    world.delete("weather", "saved", match)
    return sorted(world.table("weather", "saved"))
