"""Checks several apps share: permissions, contact look-ups, money and time-slot sanity."""

from __future__ import annotations

from typing import Any

from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.world import World


def require_permission(world: World, key: str) -> None:
    """A permission (``app.capability``) must be granted in settings before the tool works."""
    if not world.find("settings", "permissions", key):
        app, _, capability = key.partition(".")
        raise ToolFailure(
            "permission_denied",
            f"{app} lacks the {capability!r} permission; grant it with settings.grant_permission(permission={key!r})",
        )


def contact(world: World, contact_id: str) -> dict[str, Any]:
    return world.get("contacts", "contacts", contact_id, "contact")


def require_setting(world: World, key: str, why: str) -> None:
    if not world.find("settings", "values", key):
        raise ToolFailure("conflict", f"{key} is off: {why}")


def by_field(world: World, app: str, coll: str, name: str, value: Any) -> list[dict[str, Any]]:
    return [r for r in world.table(app, coll).values() if r.get(name) == value]
