"""Suite-wide fixtures: the real local stack (started once, reused), adapters per port, test isolation."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
# One torch thread per process (pytest workers and every process they spawn inherit it): the suite runs several
# model processes at once, and two processes training with a thread per core each did half the work of one
# (bench/torch_threads.py: 0.58x the SFT steps/s of one process alone; decoding 7x slower), where one thread
# each did 1.10x. Set before anything imports torch, which reads it once.
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]
# Contract-suite parameters that name a real server's adapter (tests/contract/conftest.py): such a case needs the
# stack, so it is marked ``integration`` too and ``make test-fast`` (no servers) leaves it out.
REAL_ADAPTERS = {"bus_url": "kafka", "blob_url": "s3", "registry": "mlflow-server"}


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


@pytest.fixture
def install_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``install_plugins(EntryPoint(name, "module:attr", group), ...)``: from then on the plugin registry
    (producers/backends/plugins.py) sees the installed entry points plus these, as if a distribution declared them."""
    from importlib import metadata

    from producers.backends import plugins

    real = metadata.entry_points

    def install(*extra: metadata.EntryPoint) -> None:
        def entry_points(**select: str) -> metadata.EntryPoints:
            return metadata.EntryPoints([*real(**select), *(ep for ep in extra if ep.group == select["group"])])

        monkeypatch.setattr(metadata, "entry_points", entry_points)
        plugins.reset()

    yield install
    plugins.reset()  # before monkeypatch's undo: the next lookup discovers from the real metadata again


def _closable_adapters() -> list[type[Any]]:
    from infra.blobs.s3 import S3BlobStore
    from infra.bus.embedded import EmbeddedBus, EmbeddedConsumer
    from infra.bus.kafka import KafkaBus, KafkaGroupConsumer

    return [KafkaBus, KafkaGroupConsumer, EmbeddedBus, EmbeddedConsumer, S3BlobStore]


@pytest.fixture(autouse=True)
def close_what_the_test_opened(monkeypatch) -> Iterator[None]:
    """Every bus, consumer and S3 client a test opens is closed when it ends, pass or fail.

    A Kafka client left open by a failed test kept reconnecting to a stopped broker for the rest of the session
    (hundreds of MB of log, a process that never exited). Adapters built by module- or session-scoped fixtures
    exist before this fixture starts recording, so they stay open for the tests that share them. The MLflow
    registry adapter holds no connection or thread of its own, so there is nothing of it to close.
    """
    opened: list[Any] = []
    for cls in _closable_adapters():
        original = cls.__init__

        def recording_init(self, *args, __original=original, **kwargs) -> None:  # noqa: ANN001
            __original(self, *args, **kwargs)
            opened.append(self)

        monkeypatch.setattr(cls, "__init__", recording_init)
    yield
    for adapter in reversed(opened):  # consumers before the bus they belong to
        try:
            adapter.close()
        except Exception as exc:  # noqa: BLE001 - a broken adapter must not hide the others' closing
            print(f"closing a {type(adapter).__name__} the test left open failed: {exc!r}")


def pytest_sessionfinish(session, exitstatus) -> None:
    """Name any non-daemon thread still alive: it would keep the interpreter from exiting after the last test."""
    import threading

    alive = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if alive:
        print(
            "\nnon-daemon threads still alive at the end of the session (they delay exit): "
            + ", ".join(t.name for t in alive)
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Contract cases on a real server's adapter are marked ``integration`` (see REAL_ADAPTERS).

    The longest files first, the many short ones after them: files with an end-to-end run (any e2e-marked
    test), then the fault-injection files (tests/faults), then the rest, each group in collection order (a stable
    sort, so a file's tests keep their order).

    xdist hands out files in this order when run with ``--no-loadscope-reorder`` (``make test``). Its default
    sorts files by how many tests they hold, which puts the one-test runs of 2-5 minutes last: the worker that
    drew the last of them went on for minutes after the other had run out of files.
    """
    for item in items:
        params = getattr(item, "callspec", None)
        if params and any(params.params.get(name) == real for name, real in REAL_ADAPTERS.items()):
            item.add_marker(pytest.mark.integration)
    rank: dict[Path, int] = {}
    for item in items:
        faults = item.path.is_relative_to(REPO / "tests" / "faults")
        rank[item.path] = min(rank.get(item.path, 2), 0 if item.get_closest_marker("e2e") else 1 if faults else 2)
    items.sort(key=lambda i: rank[i.path])
