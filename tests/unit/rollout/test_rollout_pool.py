"""The environment pool: caps, reuse, lease timeouts, cleanup, usage snapshots."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from producers.backends.sandbox import SandboxBackend
from producers.pool import EnvironmentPool, LeaseExpired, PoolExhausted, read_snapshots, write_snapshot

pytestmark = pytest.mark.unit


class Counted(SandboxBackend):
    closed = 0

    def close(self) -> None:
        Counted.closed += 1
        super().close()


def pool(cap: int = 2, lease_timeout_s: float = 60.0) -> EnvironmentPool:
    Counted.closed = 0
    made = EnvironmentPool(lease_timeout_s=lease_timeout_s)
    made.register("sandbox", Counted, cap)
    return made


def test_instances_are_reused_and_the_cap_holds() -> None:
    p = pool(cap=2)
    first = p.acquire("sandbox", "a")
    second = p.acquire("sandbox", "b")
    with pytest.raises(PoolExhausted, match="all 2 sandbox instances"):
        p.acquire("sandbox", "c", wait_s=0.2)
    p.release(first)
    third = p.acquire("sandbox", "c", wait_s=0.2)
    assert third.backend is first.backend
    usage = p.usage()[0]
    assert (usage.leased, usage.idle, usage.created, usage.leases) == (2, 0, 2, 3)
    p.release(second)
    p.release(third)


def test_a_waiting_acquire_gets_the_released_slot() -> None:
    p = pool(cap=1)
    held = p.acquire("sandbox", "a")
    threading.Timer(0.2, p.release, args=(held,)).start()
    assert p.acquire("sandbox", "b", wait_s=5).backend is held.backend


def test_an_expired_lease_is_reclaimed_and_closed() -> None:
    p = pool(cap=1, lease_timeout_s=0.2)
    stale = p.acquire("sandbox", "slow-worker")
    time.sleep(0.3)
    fresh = p.acquire("sandbox", "other", wait_s=1)
    assert fresh.backend is not stale.backend and Counted.closed == 1 and p.usage()[0].expired == 1
    with pytest.raises(LeaseExpired):
        p.release(stale)


def test_a_broken_instance_is_closed_not_reused() -> None:
    p = pool(cap=1)
    with pytest.raises(RuntimeError):
        with p.lease("sandbox", "a"):
            raise RuntimeError("device vanished")
    assert Counted.closed == 1 and p.usage()[0].idle == 0
    p.close()


def test_unknown_kinds_and_bad_caps_are_refused() -> None:
    p = pool()
    with pytest.raises(KeyError, match="no backend 'device'.*available: sandbox"):
        p.acquire("device", "a")
    with pytest.raises(ValueError, match="at least 1"):
        p.register("llm_sim", SandboxBackend, 0)


def test_usage_snapshots_are_written_and_read_back(tmp_path: Path) -> None:
    p = pool(cap=3)
    lease = p.acquire("sandbox", "a")
    write_snapshot(p, tmp_path, "w1")
    [(worker, age, usage)] = read_snapshots(tmp_path)
    assert worker == "w1" and age >= 0 and usage[0].cap == 3 and usage[0].leased == 1
    p.release(lease)
