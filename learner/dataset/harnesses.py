"""Finds the harness config behind a recorded harness version: the known configs first, then the registry."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping

from harness_service.config import HarnessConfig
from harness_service.versions import HarnessRegistry, load_harness_version

HarnessResolver = Callable[[str], HarnessConfig | None]
"""A recorded ``harness_version`` -> its config, or None when it cannot be found."""

REGISTRY_LABEL = re.compile(r"[^@/\s]+/\d+")
"""How episodes record a published harness version: ``name/N`` (unpublished configs record ``name@digest``)."""
_log = logging.getLogger(__name__)


def harness_resolver(known: Mapping[str, HarnessConfig], registry: HarnessRegistry | None = None) -> HarnessResolver:
    """Looks ``known`` up first, then loads ``name/N`` labels from ``registry`` (cached; unknown ones stay None).

    A version missing from the registry is skipped; a registry outage is not caught.
    """
    found: dict[str, HarnessConfig | None] = dict(known)

    def resolve(version: str) -> HarnessConfig | None:
        if version not in found:
            found[version] = _load(registry, version) if registry is not None else None
        return found[version]

    return resolve


def _load(registry: HarnessRegistry, version: str) -> HarnessConfig | None:
    if not REGISTRY_LABEL.fullmatch(version):
        return None
    try:
        config, _ = load_harness_version(registry, version)
    except LookupError as exc:  # the registry's VersionNotFound
        _log.warning("dataset: harness version %s is not in the registry: %s", version, exc)
        return None
    return config
