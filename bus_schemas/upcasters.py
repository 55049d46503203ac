"""Upcasters: pure dict transforms that lift an old event one schema version, so old logs stay readable.

To change an event's wire form: bump its ``schema_version`` Literal, register an upcaster from the old
version here, keep one old-version golden file (``golden/<Type>.v<N>.json``) and regenerate the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

RawEvent = dict[str, Any]
Upcaster = Callable[[RawEvent], RawEvent]

UPCASTERS: dict[tuple[str, int], Upcaster] = {}
"""(event_type, from_version) -> transform to from_version + 1."""


def upcaster(event_type: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register ``fn`` as the transform of ``event_type`` from ``from_version`` to the next version."""

    def register(fn: Upcaster) -> Upcaster:
        key = (event_type, from_version)
        if key in UPCASTERS:
            raise ValueError(f"an upcaster for {event_type} v{from_version} is already registered")
        UPCASTERS[key] = fn
        return fn

    return register


def upcast(raw: RawEvent, event_type: str, version: int, target: int) -> RawEvent | None:
    """Apply upcasters from ``version`` to ``target``; None when a step of the chain is missing."""
    while version < target:
        step = UPCASTERS.get((event_type, version))
        if step is None:
            return None
        version += 1
        raw = {**step(raw), "schema_version": version}
    return raw


@upcaster("EpisodeEnded", 1)
def _episode_ended_v1_to_v2(raw: RawEvent) -> RawEvent:
    """v1 had ``wall_time_ms`` and no thinking tokens or cost; v1 models had no thinking and no price."""
    raw = dict(raw)
    if "wall_time_ms" in raw:  # left missing otherwise, so validation names the field
        wall_time_ms = raw.pop("wall_time_ms")
        is_number = isinstance(wall_time_ms, (int, float)) and not isinstance(wall_time_ms, bool)
        raw["wall_time_s"] = wall_time_ms / 1000 if is_number else wall_time_ms
    raw["thinking_tokens"] = 0  # set explicitly: v1's meaning must not follow later defaults
    raw["cost_estimate_usd"] = None
    return raw


@upcaster("ActionTaken", 1)
def _action_taken_v1_to_v2(raw: RawEvent) -> RawEvent:
    """v2 added ``sampled`` (behaviour token ids and log-probs); v1 episodes recorded none."""
    return {**raw, "sampled": None}


@upcaster("ActionRejected", 1)
def _action_rejected_v1_to_v2(raw: RawEvent) -> RawEvent:
    """As ActionTaken: no behaviour log-probs in v1."""
    return {**raw, "sampled": None}


@upcaster("RolloutRequested", 1)
def _rollout_requested_v1_to_v2(raw: RawEvent) -> RawEvent:
    """v2 added ``temperature``; v1 requests ran the policy's own decoding."""
    return {**raw, "temperature": None}


@upcaster("TaskSpecified", 1)
def _task_specified_v1_to_v2(raw: RawEvent) -> RawEvent:
    """v2 made the sandbox's fields optional and added ``backend_params`` and ``user``; a v1 task had neither."""
    return {**raw, "backend_params": {}, "user": None}


@upcaster("TaskSpecified", 2)
def _task_specified_v2_to_v3(raw: RawEvent) -> RawEvent:
    """v3 added the ``call_any`` criterion kind; a v2 task has none, so its fields carry over unchanged."""
    return dict(raw)


@upcaster("DevSetEvaluated", 1)
def _dev_set_evaluated_v1_to_v2(raw: RawEvent) -> RawEvent:
    """v2 added ``external`` (scores on external suites' dev tasks); v1 evaluations had none."""
    return {**raw, "external": {}}
