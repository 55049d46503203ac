"""Bearer-token authentication: a missing or wrong token is a 401."""

from __future__ import annotations

import secrets
from collections.abc import Callable

from fastapi import Header, HTTPException, status


def bearer_guard(token: str) -> Callable[[str | None], None]:
    """A FastAPI dependency accepting only ``Authorization: Bearer <token>``."""
    expected = token.encode()

    def check(authorization: str | None = Header(default=None)) -> None:
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(given.strip().encode(), expected):
            raise HTTPException(
                status_code=status.HTTP_401_UNAUTHORIZED,
                detail="missing or invalid bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )

    return check
