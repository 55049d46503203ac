"""How an observation (result, error, state changes) is written into the context as text."""

from __future__ import annotations

import orjson

from producers.backends.base import Observation


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[{len(text) - limit} more chars clipped]"


def render_observation(observation: Observation, limit: int) -> str:
    """Canonical compact JSON of the observation, clipped to ``limit`` characters."""
    payload: dict[str, object] = {"ok": observation.ok}
    if observation.error is not None:
        payload["error"] = observation.error.model_dump(mode="json")
    else:
        payload["result"] = observation.result
    if observation.changes:
        payload["changes"] = [c.model_dump(mode="json") for c in observation.changes]
    if observation.flags:
        payload["flags"] = list(observation.flags)
    text = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()
    return clip(text, limit)
