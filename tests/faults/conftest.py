"""Fault tests stop and break servers, so each runs on a private stack (own ports, own tmp dir)."""

from __future__ import annotations

import uuid

import pytest
from stack_support import private_stack_settings

from infra.stack import Stack


@pytest.fixture
def private_stack(tmp_path):
    """Factory: ``private_stack(["kafka"])`` starts those services privately; all are stopped afterwards."""
    started: list[Stack] = []

    def start(services: list[str]) -> Stack:
        stack = Stack(private_stack_settings(tmp_path), echo=lambda msg: None)
        stack.up(services)
        started.append(stack)
        return stack

    yield start
    for stack in started:
        stack.down()


@pytest.fixture(params=["embedded", "kafka"])
def crash_urls(request, tmp_path) -> dict[str, str]:
    """Where a crash test's consumer process runs (bus/blobs/registry URLs as ``flywheel consume`` takes them): the
    embedded adapters, or the real stack (Kafka in a namespace of its own, SeaweedFS, the MLflow server; the test
    names its models uniquely there)."""
    if request.param == "embedded":
        return {
            "bus": f"sqlite:///{tmp_path}/bus.db?session_timeout_s=1.5",
            "blobs": f"file:///{tmp_path}/blobs",
            "registry": f"sqlite:///{tmp_path}/mlflow.db",
        }
    stack = request.getfixturevalue("real_stack")
    return {
        "bus": f"kafka://{stack.host}:{stack.kafka_port}?session_timeout_s=6&namespace=crash-{uuid.uuid4().hex[:10]}",
        "blobs": f"s3://flywheel-blobs?endpoint={stack.host}:{stack.s3_port}",
        "registry": stack.mlflow_url,
    }
