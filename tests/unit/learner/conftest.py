"""Learner fixtures: an embedded bus + blob directory seeded with reference episodes through the real harness."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics


@pytest.fixture
def embedded_ports(tmp_path: Path) -> Iterator[Ports]:
    ports = Ports(
        bus=open_bus(f"sqlite:///{tmp_path}/bus.db?session_timeout_s=1.5"),
        blobs=open_blob_store(f"file:///{tmp_path}/blobs"),
        registry=open_registry(f"sqlite:///{tmp_path}/mlflow.db"),
    )
    ensure_topics(ports.bus)
    yield ports
    ports.close()
