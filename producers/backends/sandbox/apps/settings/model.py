"""Toggle values, app permissions, known wifi networks and bluetooth devices."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from producers.backends.sandbox.seeding import Seeder

PERMISSIONS = (
    "phone.calls",
    "messages.location",
    "messages.photos",
    "maps.location",
    "rides.location",
    "calendar.notifications",
    "music.notifications",
    "photos.camera",
)


class Network(TypedDict):
    id: str
    ssid: str
    secured: bool
    password: str
    connected: bool


class Device(TypedDict):
    id: str
    name: str
    kind: str
    paired: bool


def seed(s: Seeder) -> dict[str, dict[str, Any]]:
    values = {
        "wifi": True,
        "bluetooth": False,
        "airplane_mode": False,
        "do_not_disturb": False,
        "dark_mode": False,
        "brightness": 60,
        "ring_volume": 70,
        "location": True,
    }
    permissions = {p: s.rng.random() < 0.3 for p in PERMISSIONS}
    networks = {}
    for i, word in enumerate(s.sample(s.pool.words, 3), start=1):
        networks[f"net_{i}"] = Network(
            id=f"net_{i}",
            ssid=f"{word.title()}Net",
            secured=i != 3,
            password=f"{word}{s.rng.randrange(100, 999)}" if i != 3 else "",
            connected=i == 1,
        )
    devices = {
        f"bt_{i}": Device(id=f"bt_{i}", name=f"{brand} {kind}", kind=kind, paired=False)
        for i, (brand, kind) in enumerate((("Pico", "headphones"), ("Orbit", "speaker"), ("Zenith", "car")), start=1)
    }
    return {"values": values, "permissions": permissions, "networks": networks, "devices": devices}
