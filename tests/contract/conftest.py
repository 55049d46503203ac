"""Adapters for the per-port contract suites: every test runs against each adapter of its port."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from infra.bootstrap import open_blob_store, open_bus, open_registry
from infra.config import Settings

EMBEDDED_SESSION_TIMEOUT_S = 1.5
KAFKA_SESSION_TIMEOUT_S = 6.0  # the broker's group.min.session.timeout.ms


@pytest.fixture(params=["embedded", "kafka"])
def bus_url(request, tmp_path) -> str:
    if request.param == "embedded":
        return f"sqlite:///{tmp_path}/bus.db?session_timeout_s={EMBEDDED_SESSION_TIMEOUT_S}"
    stack = request.getfixturevalue("real_stack")
    namespace = f"test-{uuid.uuid4().hex[:10]}"
    return f"kafka://{stack.host}:{stack.kafka_port}?session_timeout_s={KAFKA_SESSION_TIMEOUT_S}&namespace={namespace}"


@pytest.fixture
def bus(bus_url) -> Iterator:
    adapter = open_bus(bus_url)
    yield adapter
    adapter.close()


@pytest.fixture(params=["file", "s3"])
def blob_url(request, tmp_path) -> str:
    if request.param == "file":
        return f"file:///{tmp_path}/blobs"
    stack = request.getfixturevalue("real_stack")
    return f"s3://flywheel-blobs?endpoint={stack.host}:{stack.s3_port}"


@pytest.fixture
def blobs(blob_url):
    stack = Settings().stack
    return open_blob_store(
        blob_url,
        Settings(s3_access_key=stack.s3_access_key, s3_secret_key=stack.s3_secret_key),
    )


@pytest.fixture(params=["sqlite", "mlflow-server"])
def registry(request, tmp_path):
    if request.param == "sqlite":
        return open_registry(f"sqlite:///{tmp_path}/mlflow.db")
    stack = request.getfixturevalue("real_stack")
    return open_registry(stack.mlflow_url)
