"""How an observation (result, error, state changes) is written into the context as text."""

from __future__ import annotations

from typing import Literal

import orjson

from producers.backends.base import Observation

ObservationStyle = Literal["full", "result"]


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[{len(text) - limit} more chars clipped]"


def _without_empty(value: object) -> object:
    """``value`` without ``None``, ``false``, empty strings and empty containers inside mappings."""
    if isinstance(value, dict):
        kept = {k: _without_empty(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None and v is not False and v not in ("", [], {})}
    if isinstance(value, list):
        return [_without_empty(v) for v in value]
    return value


def _for_the_model(result: object) -> object:
    """A result as the compact profile shows it: without empty fields, and a sub-agent's result without its child's
    episode id (random per run, so identical demonstrations trained on different tokens; the event keeps it)."""
    kept = _without_empty(result)
    if isinstance(kept, dict) and kept.get("kind") == "subagent_result":
        kept.pop("child_episode_id", None)
    return kept


def render_observation(observation: Observation, limit: int, style: ObservationStyle = "full") -> str:
    """Canonical compact JSON of the observation, clipped to ``limit`` characters.

    ``full``: ``ok``, the result or error, the state changes and flags. ``result``: the result (without empty
    fields and record-only ids) or the error, and flags (a compact harness profile for small models)."""
    payload: dict[str, object] = {} if style == "result" else {"ok": observation.ok}
    if observation.error is not None:
        payload["error"] = observation.error.model_dump(mode="json")
    else:
        payload["result"] = _for_the_model(observation.result) if style == "result" else observation.result
    if observation.changes and style == "full":
        payload["changes"] = [c.model_dump(mode="json") for c in observation.changes]
    if observation.flags:
        payload["flags"] = list(observation.flags)
    text = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()
    return clip(text, limit)
