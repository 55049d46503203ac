"""The calls that show one piece of evidence, as ``(tool, where)`` options of a ``looked_up`` criterion.

Each lists every tool of the sandbox that serves the evidence, so the verifier asks that it was seen, not how.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from producers.backends.sandbox.seeding import TODAY

Option = tuple[str, dict[str, Any]]
FORECAST_DEFAULT_DAYS = 3  # weather.forecast's ``days`` when the call leaves it out
FORECAST_MAX_DAYS = 7


def weather_on(city: str, day: str, *, rain: bool = False) -> tuple[Option, ...]:
    """``city``'s forecast for ``day``: ``weather.on_day`` for it, or a ``weather.forecast`` long enough to reach it
    (leaving ``days`` out counts only when its default reaches the day); with ``rain``, ``weather.will_it_rain`` too."""
    need = (date.fromisoformat(day) - TODAY).days + 1
    long_enough: dict[str, Any] = {"any": [{"days": n} for n in range(need, FORECAST_MAX_DAYS + 1)]}
    if need <= FORECAST_DEFAULT_DAYS:
        long_enough = {"not": {"any": [{"days": n} for n in range(1, need)]}} if need > 1 else {}
    options: list[Option] = [
        ("weather.on_day", {"city__norm": city, "day__norm": day}),
        ("weather.forecast", {"city__norm": city, **long_enough}),
    ]
    if rain:
        options.append(("weather.will_it_rain", {"city__norm": city, "day__norm": day}))
    return tuple(options)


def route_from_home(place_id: str, **where: Any) -> tuple[Option, ...]:
    """The way between home (``pl_1``) and ``place_id``, either direction: ``maps.directions`` matching ``where``
    (a mode), or ``maps.compare_modes``, which shows every mode."""
    ends = {
        "any": [{"origin_id": "pl_1", "destination_id": place_id}, {"origin_id": place_id, "destination_id": "pl_1"}]
    }
    return ("maps.directions", {**ends, **where}), ("maps.compare_modes", ends)


def messages_with(contact_id: str) -> tuple[Option, ...]:
    """The messages exchanged with one contact and whether they are read: the conversation, the unread list, a
    search by the contact's id, or the message list."""
    return (
        ("messages.conversation", {"contact_id": contact_id}),
        ("messages.list_unread", {}),
        ("messages.search_messages", {"query__norm": contact_id}),
        ("messages.list_messages", {}),
    )
