"""Runs a blocking episode in a thread and yields its events as NDJSON lines while it runs."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator

import orjson

from bus_schemas.envelope import Event
from harness_service.ports import EventSink

_DONE = object()


def stream_events(run: Callable[[EventSink], object], also: EventSink | None = None) -> Iterator[bytes]:
    """Call ``run(sink)`` in a thread; every event it publishes goes to ``also`` (if any) and out as one line."""
    lines: queue.Queue[object] = queue.Queue()

    def sink(event: Event) -> None:
        if also is not None:
            also(event)
        lines.put(event.model_dump_json().encode() + b"\n")

    def target() -> None:
        try:
            run(sink)
        except Exception as exc:  # reported in the stream; the HTTP status is already 200
            lines.put(orjson.dumps({"error": f"{type(exc).__name__}: {exc}"}) + b"\n")
        finally:
            lines.put(_DONE)

    threading.Thread(target=target, name="episode", daemon=True).start()
    while (item := lines.get()) is not _DONE:
        yield item  # type: ignore[misc]
