"""What every stack service provides to the manager."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

from infra.config import StackSettings

Echo = Callable[[str], None]


class StackError(RuntimeError):
    """A stack operation failed; the message says what, where, and (for servers) the log tail."""


class ServiceUnreachable(StackError):
    """A server did not answer its readiness check within the allowed time."""


class Service(ABC):
    """One server of the local stack. Subclasses are stateless apart from their settings."""

    name: str = ""
    #: Services that must be running before this one starts.
    requires: tuple[str, ...] = ()

    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings
        self.root = settings.dir.expanduser().resolve()
        self.cache = settings.cache_path.expanduser().resolve()

    # --- locations -------------------------------------------------------------------------------
    @property
    def home(self) -> Path:
        """Where this service keeps its data and generated config."""
        return self.root / self.name

    @property
    @abstractmethod
    def url(self) -> str:
        """The address clients use."""

    @abstractmethod
    def ports(self) -> list[int]:
        """Every loopback port the server binds (checked to be free before a start)."""

    def listening(self) -> list[str]:
        """Lines printed after the service is ready: where it listens, how to reach it."""
        return [self.url]

    # --- lifecycle -------------------------------------------------------------------------------
    def provision(self, echo: Echo) -> None:  # noqa: B027 (an optional hook: doing nothing is the default)
        """Download/build what the service needs (cached; a warm call does no network I/O)."""

    def prepare(self) -> None:  # noqa: B027 (an optional hook: doing nothing is the default)
        """Write config files and create data folders right before a start."""

    @abstractmethod
    def command(self) -> list[str]:
        """The argv to start the server (no shell)."""

    def env(self) -> dict[str, str]:
        """Extra environment variables for the server process."""
        return {}

    @abstractmethod
    def probe(self, timeout_s: float) -> None:
        """One readiness attempt bounded by ``timeout_s``; raises on failure."""

    def after_ready(self, echo: Echo) -> None:  # noqa: B027 (an optional hook: doing nothing is the default)
        """Run once the server answers (create buckets, ...)."""
