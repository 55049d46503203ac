"""Hot reload: a HarnessVersionPublished for this harness swaps the config; others are ignored."""

from __future__ import annotations

import pytest
from harness_fakes import MemoryBlobs

from bus_schemas.envelope import Producer
from bus_schemas.events.harness import HarnessVersionPublished
from harness_service.config import HarnessConfig
from harness_service.live_config import LiveConfig

pytestmark = pytest.mark.unit


def published(blobs: MemoryBlobs, config: HarnessConfig, name: str, version: str) -> HarnessVersionPublished:
    ref = blobs.put(config.model_dump_json().encode(), "application/json")
    return HarnessVersionPublished(
        producer=Producer(service="reviser", version="1"),
        run_id="r",
        harness_name=name,
        harness_version=version,
        config=ref,
    )


def test_a_published_version_of_this_harness_is_loaded() -> None:
    blobs, live = MemoryBlobs(), LiveConfig(HarnessConfig(name="planner"))
    assert live.version.startswith("planner@sha256:")
    newer = HarnessConfig(name="planner", instructions="Be brief.")
    assert live.apply(published(blobs, newer, "planner", "planner/2"), blobs)
    assert live() == newer and live.version == "planner/2"


def test_other_harnesses_and_mismatched_configs_are_not_loaded() -> None:
    blobs, original = MemoryBlobs(), HarnessConfig(name="planner")
    live = LiveConfig(original)
    assert not live.apply(published(blobs, HarnessConfig(name="other"), "other", "other/1"), blobs)
    with pytest.raises(ValueError, match="named 'other'"):
        live.apply(published(blobs, HarnessConfig(name="other"), "planner", "planner/3"), blobs)
    assert live() is original
