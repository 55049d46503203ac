"""One package per app; the order matters because later apps link to what earlier ones seeded."""

from producers.backends.sandbox.apps import (
    calendar,
    clock,
    contacts,
    email,
    food,
    maps,
    messages,
    music,
    notes,
    phone,
    photos,
    reminders,
    rides,
    settings,
    shopping,
    travel,
    wallet,
    weather,
)

APPS = (contacts, phone, messages, email, calendar, clock, notes, reminders, maps, rides, food, shopping, wallet, music, photos, settings, weather, travel)
