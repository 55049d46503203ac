"""Consumers on each bus: the embedded log and the real Kafka broker (a fresh namespace per test)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics


@pytest.fixture(params=["embedded", "kafka"])
def urls(request, tmp_path) -> dict[str, str]:
    """bus/blobs/registry URLs as ``flywheel consume`` takes them."""
    common = {"blobs": f"file:///{tmp_path}/blobs", "registry": f"sqlite:///{tmp_path}/mlflow.db"}
    if request.param == "embedded":
        return {"bus": f"sqlite:///{tmp_path}/bus.db?session_timeout_s=1.5", **common}
    stack = request.getfixturevalue("real_stack")
    namespace = f"test-{uuid.uuid4().hex[:10]}"
    return {"bus": f"kafka://{stack.host}:{stack.kafka_port}?session_timeout_s=6&namespace={namespace}", **common}


@pytest.fixture
def ports(urls) -> Iterator[Ports]:
    bus = open_bus(urls["bus"])
    ensure_topics(bus)
    opened = Ports(bus=bus, blobs=open_blob_store(urls["blobs"]), registry=open_registry(urls["registry"]))
    yield opened
    bus.close()
