"""Errors the bus adapters raise; each names the bus URL so an operator knows where to look."""


class BusError(RuntimeError):
    """Base class of bus failures."""


class BusUnavailable(BusError):
    """The broker (or the embedded log file) could not be reached within the configured timeout."""


class UnknownTopic(BusError):
    """A topic that was never created."""


class BusWriteError(BusError):
    """A publish could not be made durable (disk full, permission denied, broker refused)."""


class BusClosed(BusUnavailable):
    """A call on a client that was already closed."""
