"""What the service accepts, bounded before any work is done: body size, token, validation errors, episodes.

Pure ASGI middleware runs before FastAPI reads a byte of the body, so an oversized or unauthenticated
request costs a header parse, not a body parse. The validation-error handler never echoes the input: an
echo could be megabytes long, or not even serialisable (NaN, lone surrogates).
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_ERRORS = 20
MAX_MESSAGE_CHARS = 300


@dataclass(frozen=True)
class RequestLimits:
    """How much the service takes on at once. Beyond ``max_episodes`` running episodes a request gets 503."""

    max_body_bytes: int = 1024 * 1024
    max_episodes: int = 8
    retry_after_s: int = 5


def _text(value: object, limit: int) -> str:
    """Printable, UTF-8-safe and short, whatever the value held."""
    return str(value).encode("utf-8", "replace").decode("utf-8")[:limit]


async def validation_error_handler(request: Request, exc: Exception) -> JSONResponse:  # noqa: ARG001
    """422 listing where and why (location, message, type), never the offending input or its context."""
    assert isinstance(exc, RequestValidationError)
    details = [
        {
            "loc": [_text(part, 64) for part in error.get("loc", ())][:16],
            "msg": _text(error.get("msg", ""), MAX_MESSAGE_CHARS),
            "type": _text(error.get("type", ""), 64),
        }
        for error in exc.errors()[:MAX_ERRORS]
    ]
    return JSONResponse({"detail": details}, status_code=422)


async def _respond(send: Send, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
    body = JSONResponse({"detail": detail}, status_code=status, headers=headers)
    await send({"type": "http.response.start", "status": status, "headers": body.raw_headers})
    await send({"type": "http.response.body", "body": body.body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


class GuardMiddleware:
    """Before the app reads the body: a bearer token for ``protected`` paths (401), then the size (413) from
    ``Content-Length``; a body sent without one is counted as it arrives and cut off at the limit."""

    def __init__(
        self, app: ASGIApp, *, token: str, max_body_bytes: int, protected: tuple[str, ...] = ("/v1/",)
    ) -> None:
        self.app = app
        self.expected = token.encode()
        self.max_body_bytes = max_body_bytes
        self.protected = protected

    def _authorised(self, scope: Scope) -> bool:
        scheme, _, given = (_header(scope, b"authorization") or "").partition(" ")
        return scheme.lower() == "bearer" and secrets.compare_digest(given.strip().encode("latin-1"), self.expected)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"].startswith(self.protected) and not self._authorised(scope):
            await _respond(send, 401, "missing or invalid bearer token", {"WWW-Authenticate": "Bearer"})
            return
        declared = _header(scope, b"content-length")
        if declared is not None and (not declared.strip().isdigit() or int(declared) > self.max_body_bytes):
            await _respond(send, 413, f"the request body is over the limit of {self.max_body_bytes} bytes")
            return
        await self.app(scope, self._counting(receive), send)

    def _counting(self, receive: Receive) -> Receive:
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:  # FastAPI passes an HTTPException raised here through
                    raise HTTPException(413, f"the request body is over the limit of {self.max_body_bytes} bytes")
            return message

        return counted


class EpisodeSlots:
    """A bounded pool of running episodes; ``take`` never blocks: a full pool is a 503 with Retry-After."""

    def __init__(self, limits: RequestLimits) -> None:
        self.limits = limits
        self._free = threading.BoundedSemaphore(limits.max_episodes)

    def take(self) -> None:
        if not self._free.acquire(blocking=False):
            raise HTTPException(
                status_code=503,
                detail=f"{self.limits.max_episodes} episodes are running, the most this server runs at once; retry "
                "later",
                headers={"Retry-After": str(self.limits.retry_after_s)},
            )

    def give_back(self) -> None:
        self._free.release()


def install(app: Any, *, token: str, limits: RequestLimits) -> None:
    """Add the guard middleware and the non-echoing validation handler to a FastAPI app."""
    app.add_exception_handler(RequestValidationError, validation_error_handler)
    app.add_middleware(GuardMiddleware, token=token, max_body_bytes=limits.max_body_bytes)
