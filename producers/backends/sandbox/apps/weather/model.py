"""Daily forecasts for every city of the pool over the next week."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder, day

CONDITIONS = ("sunny", "cloudy", "rain", "storm", "snow", "windy")


class Forecast(TypedDict):
    city: str
    date: str
    condition: str
    high_c: int
    low_c: int
    rain_pct: int
    uv: int
    aqi: int


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    forecasts = {}
    for city in s.pool.cities:
        for d in range(7):
            high = s.rng.randrange(4, 30)
            forecasts[f"{city}|{day(d)}"] = Forecast(
                city=city,
                date=day(d),
                condition=s.pick(CONDITIONS),
                high_c=high,
                low_c=high - s.rng.randrange(3, 10),
                rain_pct=s.rng.randrange(0, 100),
                uv=s.rng.randrange(0, 11),
                aqi=s.rng.randrange(10, 180),
            )
    saved = {city: {"city": city} for city in s.pool.cities[:1]}
    return {"forecasts": forecasts, "saved": saved}
