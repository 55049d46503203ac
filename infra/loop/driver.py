"""Runs the loop until its last round completes: steps the consumers (if in-process),
folds the log, updates the view."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from infra.loop.monitor import RunMonitor


class Consumers(Protocol):
    idle_sleep_s: float
    """How long the driver waits when neither a step nor the log brought anything new."""

    def step(self) -> int: ...
    def check(self) -> None: ...


class LoopStalled(RuntimeError):
    """The log stopped growing before the last round completed."""


def describe(monitor: RunMonitor) -> str:
    """Where a run stands, for the stall error: the last round and what it is waiting for."""
    if not monitor.rounds:
        return "no round has started (is the reweighter/round controller running?)"
    r = monitor.rounds[max(monitor.rounds)]
    if r.curated < r.planned:
        return f"round {r.round}: {r.ended}/{r.planned} rollouts ended, {r.verified} verified, {r.curated} curated"
    if r.training == "running":
        return f"round {r.round}: waiting for training"
    if r.dev is None:
        return f"round {r.round}: dev evaluation {r.dev_verified}/{r.dev_planned} verified"
    return f"round {r.round}: waiting for the harness reviser ({r.harness or 'no answer'}) or round completion"


def drive(
    consumers: Consumers,
    monitor: RunMonitor,
    rounds: int,
    *,
    stall_timeout_s: float,
    on_update: Callable[[RunMonitor], None],
    stop: threading.Event | None = None,
) -> None:
    last_growth = time.monotonic()
    while True:
        if stop is not None and stop.is_set():
            raise SystemExit(143)  # SIGTERM (see infra.cli.signals.exit_on_sigterm)
        handled = consumers.step()
        fresh = monitor.update()
        if fresh or handled:
            last_growth = time.monotonic()
            on_update(monitor)
        final = monitor.rounds.get(rounds - 1)
        if final is not None and final.completed is not None:
            return
        consumers.check()
        if time.monotonic() - last_growth > stall_timeout_s:
            raise LoopStalled(f"nothing happened for {stall_timeout_s:.0f}s; {describe(monitor)}")
        if not handled and not fresh:
            time.sleep(consumers.idle_sleep_s)
