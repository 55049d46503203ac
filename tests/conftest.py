"""Suite-wide fixtures: the real local stack (started once, reused), adapters per port, test isolation."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def stack_settings():
    from infra.config import Settings

    return Settings().stack


@pytest.fixture(scope="session")
def real_stack(stack_settings):
    """The real Kafka + SeaweedFS + MLflow on loopback, brought up by our own scripts (a no-op if already up)."""
    from infra.stack.manager import Stack

    stack = Stack(stack_settings)
    stack.up()
    return stack_settings


@pytest.fixture
def unique() -> str:
    """A short unique suffix, so tests sharing the real broker/bucket/registry never see each other's data."""
    return uuid.uuid4().hex[:10]


@pytest.fixture
def embedded_dir(tmp_path: Path) -> Path:
    return tmp_path
