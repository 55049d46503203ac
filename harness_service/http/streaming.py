"""Runs a blocking episode in its own thread and streams its events as NDJSON lines while it runs.

The stream waits on an asyncio queue, so a slow episode holds no worker thread of the server (``/healthz``
keeps answering however many episodes run). When the client goes away the stream is cancelled, and the
episode's policy refuses its next call: the episode ends (as ``error``) instead of running on for nobody.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import orjson

from bus_schemas.envelope import Event
from harness_service.context.messages import ChatMessage
from harness_service.policy.base import Policy, PolicyError, PolicyOutput, generate_step
from harness_service.ports import EventSink
from producers.backends.base import ToolSpec

_DONE = object()


class ClientGone(PolicyError):
    """The client that asked for the episode disconnected; no further policy call is made."""


class CancellablePolicy:
    """A policy that stops answering once ``cancelled`` is set; everything else is the wrapped policy's."""

    def __init__(self, inner: Policy, cancelled: threading.Event) -> None:
        self._inner = inner
        self._cancelled = cancelled

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        self._check()
        return self._inner.generate(messages)

    def generate_with_tools(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> PolicyOutput:
        """The step's tools reach the wrapped policy when it takes them (``generate_step``)."""
        self._check()
        return generate_step(self._inner, messages, tools)

    def _check(self) -> None:
        if self._cancelled.is_set():
            raise ClientGone("the client disconnected; episode cancelled")


def stream_events(
    run: Callable[[EventSink], object],
    also: EventSink | None = None,
    *,
    cancelled: threading.Event | None = None,
    finished: Callable[[], None] | None = None,
) -> AsyncIterator[bytes]:
    """Start ``run(sink)`` in a thread now (call this on the server's event loop) and return its lines: every
    event goes to ``also`` (if any) and out as one line. ``cancelled`` is set when the stream stops early
    (client gone); ``finished`` is called once the episode thread ends, whether or not anyone read it."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[object] = asyncio.Queue()
    cancelled = cancelled or threading.Event()

    def put(item: object) -> None:
        try:
            loop.call_soon_threadsafe(lines.put_nowait, item)
        except RuntimeError:  # the server's loop is gone: nobody is listening
            pass

    def sink(event: Event) -> None:
        if also is not None:
            also(event)
        put(event.model_dump_json().encode() + b"\n")

    def target() -> None:
        try:
            run(sink)
        except Exception as exc:  # reported in the stream; the HTTP status is already 200
            put(orjson.dumps({"error": f"{type(exc).__name__}: {str(exc)[:2000]}"}) + b"\n")
        finally:
            if finished is not None:
                finished()
            put(_DONE)

    threading.Thread(target=target, name="episode", daemon=True).start()
    return _lines(lines, cancelled)


async def _lines(lines: asyncio.Queue[object], cancelled: threading.Event) -> AsyncIterator[bytes]:
    try:
        while (item := await lines.get()) is not _DONE:
            yield item  # type: ignore[misc]
    finally:
        cancelled.set()  # a no-op once the episode is over; otherwise it stops at its next policy call
