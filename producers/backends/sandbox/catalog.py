"""The phone's app catalogue: every app's toolkit and seed function, the tool index, and world building."""

from __future__ import annotations

import random
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from producers.backends.sandbox.apps import APPS
from producers.backends.sandbox.pools import Split, world_pool
from producers.backends.sandbox.registry import Tool
from producers.backends.sandbox.seeding import NOW, Seeder
from producers.backends.sandbox.world import State

APP_NAMES: tuple[str, ...] = tuple(app.TOOLS.app for app in APPS)
TOOLS: Mapping[str, Tool] = MappingProxyType({t.name: t for app in APPS for t in app.TOOLS.tools})
RECORDS: Mapping[tuple[str, str], type] = MappingProxyType(
    {(app.TOOLS.app, coll): rec for app in APPS for coll, rec in app.TOOLS.records.items()}
)
if len(TOOLS) != sum(len(app.TOOLS.tools) for app in APPS):
    raise RuntimeError("two tools share a name")


@lru_cache(maxsize=64)
def base_world(seed: int, split: Split) -> State:
    """The seeded world of one (seed, split); cached, shared, never mutated."""
    s = Seeder(rng=random.Random(f"{split}:{seed}"), pool=world_pool(split, seed))
    s.state["system"] = {"device": {"now": NOW.isoformat(timespec="minutes"), "owner": "Alex Morgan"}}
    for app in APPS:
        s.state[app.TOOLS.app] = app.seed(s)
    return s.state


def apply_fixtures(base: State, fixtures: Mapping[str, Any]) -> State:
    """Overlay ``{"/app/collection/key": value}`` fixtures (None deletes), copying only touched tables."""
    if not fixtures:
        return base
    state = dict(base)
    copied: set[tuple[str, str]] = set()
    for path, value in sorted(fixtures.items()):
        _, app, coll, key = path.split("/", 3)
        if (app, coll) not in copied:
            if state[app] is base[app]:
                state[app] = dict(base[app])
            state[app][coll] = dict(state[app].get(coll, {}))
            copied.add((app, coll))
        if value is None:
            state[app][coll].pop(key, None)
        else:
            state[app][coll][key] = value
    return state
