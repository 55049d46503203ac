"""Settings tools: wifi, bluetooth, airplane mode, do-not-disturb, display, sound, permissions."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from producers.backends.sandbox.apps.common import require_setting
from producers.backends.sandbox.apps.settings.model import PERMISSIONS, Device, Network
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.registry import AppTools, Args, IdArgs, NoArgs
from producers.backends.sandbox.world import World

TOOLS = AppTools("settings")
TOOLS.records.update(permissions=bool, networks=Network, devices=Device)


class Toggle(Args):
    on: bool


class Level(Args):
    level: int = Field(ge=0, le=100)


class Join(Args):
    network_id: str
    password: str = ""


class Permission(Args):
    permission: str = Field(description=f"One of {', '.join(PERMISSIONS)}.")


def _set(world: World, key: str, value: Any) -> dict[str, Any]:
    world.put("settings", "values", key, value)
    return dict(world.table("settings", "values"))


def _permission(world: World, key: str, value: bool) -> dict[str, bool]:
    if key not in PERMISSIONS:
        raise ToolFailure("invalid_argument", f"unknown permission {key!r}; known: {', '.join(PERMISSIONS)}")
    if world.table("settings", "permissions")[key] == value:
        raise ToolFailure("conflict", f"{key} is already {'granted' if value else 'revoked'}")
    world.put("settings", "permissions", key, value)
    return {key: value}


def _pairing(world: World, device_id: str, value: bool) -> Device:
    device = world.get("settings", "devices", device_id, "bluetooth device")
    if value:
        require_setting(world, "bluetooth", "turn bluetooth on first")
    if device["paired"] == value:
        raise ToolFailure("conflict", f"{device['name']} is already {'paired' if value else 'unpaired'}")
    return world.patch("settings", "devices", device_id, paired=value)


def _setting(key: str, doc: str, args: type[Toggle] | type[Level], example: dict[str, Any]) -> None:
    """``settings.set_<key>``: one plain value, no preconditions."""

    def set_value(world: World, a: Any) -> dict[str, Any]:
        return _set(world, key, a.on if isinstance(a, Toggle) else a.level)

    TOOLS.generated(set_value, f"set_{key}", doc, args, dict[str, Any], writes=True, example=example)


for _key, _doc in (
    ("wifi", "Turn wifi on or off."),
    ("bluetooth", "Turn bluetooth on or off."),
    ("do_not_disturb", "Silence calls and notifications."),
    ("dark_mode", "Dark or light theme."),
    ("location", "Turn location services on or off."),
):
    _setting(_key, _doc, Toggle, {"on": True})
_setting("brightness", "Screen brightness 0-100.", Level, {"level": 80})
_setting("ring_volume", "Ringer volume 0-100.", Level, {"level": 20})


@TOOLS.tool()
def get_all(world: World, a: NoArgs) -> dict[str, Any]:
    """Every toggle and level (wifi, bluetooth, airplane_mode, do_not_disturb, dark_mode, brightness, ring_volume,
    location)."""
    return dict(world.table("settings", "values"))


@TOOLS.tool(writes=True, example={"on": True})
def set_airplane_mode(world: World, a: Toggle) -> dict[str, Any]:
    """Airplane mode (turning it on also turns wifi and bluetooth off)."""
    if a.on:
        world.put("settings", "values", "wifi", False)
        world.put("settings", "values", "bluetooth", False)
    return _set(world, "airplane_mode", a.on)


@TOOLS.tool()
def list_networks(world: World, a: NoArgs) -> list[Network]:
    """Wifi networks in range (passwords hidden)."""
    return [
        Network(
            id=n["id"],
            ssid=n["ssid"],
            secured=n["secured"],
            password="***" if n["password"] else "",
            connected=n["connected"],
        )
        for n in world.table("settings", "networks").values()
    ]


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such network", "conflict": "wifi is off", "permission_denied": "wrong password"},
    example={"network_id": "net_3"},
)
def join_network(world: World, a: Join) -> Network:
    """Connect to a wifi network (secured ones need the password)."""
    network = world.get("settings", "networks", a.network_id, "network")
    require_setting(world, "wifi", "turn wifi on first")
    if network["secured"] and a.password != network["password"]:
        raise ToolFailure("permission_denied", f"wrong password for {network['ssid']}")
    for other in world.table("settings", "networks").values():
        if other["connected"] and other["id"] != a.network_id:
            world.patch("settings", "networks", other["id"], connected=False)
    return world.patch("settings", "networks", a.network_id, connected=True)


@TOOLS.tool()
def list_devices(world: World, a: NoArgs) -> list[Device]:
    """Bluetooth devices nearby and whether they are paired."""
    return list(world.table("settings", "devices").values())


@TOOLS.tool(
    writes=True,
    errors={"not_found": "no such device", "conflict": "bluetooth is off, or already paired"},
    example={"id": "bt_1"},
)
def pair_device(world: World, a: IdArgs) -> Device:
    """Pair a bluetooth device (bluetooth must be on)."""
    return _pairing(world, a.id, True)


@TOOLS.tool(writes=True, errors={"not_found": "no such device", "conflict": "not paired"}, example={"id": "bt_1"})
def unpair_device(world: World, a: IdArgs) -> Device:
    """Forget a paired bluetooth device."""
    return _pairing(world, a.id, False)


@TOOLS.tool()
def list_permissions(world: World, a: NoArgs) -> dict[str, bool]:
    """Every app permission and whether it is granted."""
    return dict(world.table("settings", "permissions"))


@TOOLS.tool(
    writes=True,
    errors={"invalid_argument": "unknown permission", "conflict": "already granted"},
    example={"permission": "maps.location"},
)
def grant_permission(world: World, a: Permission) -> dict[str, bool]:
    """Grant an app permission, e.g. maps.location."""
    return _permission(world, a.permission, True)


@TOOLS.tool(
    writes=True,
    errors={"invalid_argument": "unknown permission", "conflict": "already revoked"},
    example={"permission": "maps.location"},
)
def revoke_permission(world: World, a: Permission) -> dict[str, bool]:
    """Revoke an app permission."""
    return _permission(world, a.permission, False)
