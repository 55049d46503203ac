"""The harness config in use, swapped in place when a new version of the same harness is published (hot reload)."""

from __future__ import annotations

import threading

from bus_schemas.events.harness import HarnessVersionPublished
from harness_service.config import HarnessConfig
from harness_service.ports import BlobSource


class LiveConfig:
    """The config in use and its version label; ``apply`` handles HarnessVersionPublished."""

    def __init__(self, config: HarnessConfig, version: str | None = None) -> None:
        self._lock = threading.Lock()
        self._current = (config, version or f"{config.name}@{config.digest()}")

    def __call__(self) -> HarnessConfig:
        return self._current[0]

    @property
    def version(self) -> str:
        return self._current[1]

    def current(self) -> tuple[HarnessConfig, str]:
        """Config and version label read together, consistent even during a swap."""
        return self._current

    def apply(self, event: HarnessVersionPublished, blobs: BlobSource) -> bool:
        """Load the published config if it is for this harness; episodes already running keep their config."""
        if event.harness_name != self._current[0].name:
            return False
        config = HarnessConfig.model_validate_json(blobs.get(event.config))
        if config.name != event.harness_name:
            raise ValueError(f"published config is named {config.name!r}, event says {event.harness_name!r}")
        with self._lock:
            self._current = (config, event.harness_version)
        return True
