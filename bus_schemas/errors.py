"""Why an event could not be read or written. Consumers catch ``SchemaError`` and dead-letter the message."""

from __future__ import annotations


class SchemaError(ValueError):
    """Base of every error the codec raises; never anything else escapes ``decode``."""


class MalformedEvent(SchemaError):
    """The bytes are not JSON, not an object, or fail validation; ``fields`` lists the offending locations."""

    def __init__(self, message: str, fields: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.fields = fields


class UnknownEventType(SchemaError):
    """The ``event_type`` names no event this code knows."""

    def __init__(self, event_type: str) -> None:
        super().__init__(f"unknown event_type {event_type!r}")
        self.event_type = event_type


class UnsupportedSchemaVersion(SchemaError):
    """A known type at a version this code cannot read: from the future, or older without an upcaster path."""

    def __init__(self, event_type: str, version: int, current: int) -> None:
        super().__init__(
            f"{event_type} schema_version {version} is not supported (this code reads versions up to {current}); "
            "upgrade the consumer or register an upcaster"
        )
        self.event_type = event_type
        self.version = version
        self.current = current


class UnexpectedEventType(SchemaError):
    """``decode_as`` got a valid event of another type than the caller asked for."""

    def __init__(self, expected: str, actual: str) -> None:
        super().__init__(f"expected a {expected} event, got {actual}")
        self.expected = expected
        self.actual = actual


class EnvelopeMismatch(SchemaError):
    """A valid event in an inconsistent record: its header names another type, or it is on another type's topic."""


class PayloadTooLarge(SchemaError):
    """An encoded event exceeds the inline limit; large payloads belong in the blob store."""

    def __init__(self, event_type: str | None, size: int, limit: int) -> None:
        super().__init__(
            f"{event_type or 'message'} is {size} bytes, over the inline limit of {limit} bytes: write the large "
            "payload "
            "to the blob store first and put a BlobRef in the event"
        )
        self.event_type = event_type
        self.size = size
        self.limit = limit
