"""The uvicorn server of the service, with bounds on connections: how many, how long a client may take to
send its request headers, how big they may be, how long an idle keep-alive connection is kept."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol


@dataclass(frozen=True)
class ServerLimits:
    limit_concurrency: int = 64
    """Connections plus running requests; beyond it uvicorn answers 503 at once."""
    header_timeout_s: float = 10.0
    """A client must finish its request line and headers within this; slow-drip clients are disconnected."""
    keep_alive_s: int = 5
    max_header_bytes: int = 16 * 1024
    graceful_shutdown_s: int = 30


class HeaderDeadlineH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's headers (uvicorn has none: a client sending
    one byte every few seconds would hold its connection, and a ``limit_concurrency`` slot, forever)."""

    header_timeout_s = 10.0
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()  # the next request on a kept-alive connection gets its own deadline

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(self.header_timeout_s, self._headers_late)

    def _headers_late(self) -> None:
        waiting_for_headers = self.cycle is None or self.cycle.response_complete
        if waiting_for_headers and not self.transport.is_closing():
            self.transport.close()


def server_config(app: Any, host: str, port: int, limits: ServerLimits | None = None, **options: Any) -> uvicorn.Config:
    """A uvicorn config for ``app`` with ``limits`` applied (h11, the header deadline protocol)."""
    limits = limits or ServerLimits()
    protocol = type("BoundedH11", (HeaderDeadlineH11,), {"header_timeout_s": limits.header_timeout_s})
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol,
        limit_concurrency=limits.limit_concurrency,
        timeout_keep_alive=limits.keep_alive_s,
        h11_max_incomplete_event_size=limits.max_header_bytes,
        timeout_graceful_shutdown=limits.graceful_shutdown_s,
        **options,
    )
