"""The one exception a tool raises to hand a documented error back to the policy as structured feedback."""

from __future__ import annotations

from bus_schemas.actions import ErrorCode


class ToolFailure(Exception):
    """Caught by the backend and turned into ``Observation(error=ToolError(...))``; never reaches the policy."""

    def __init__(self, code: ErrorCode, message: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.retryable = retryable
