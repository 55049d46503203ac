"""Backend instances per kind with a concurrency cap and a lease timeout; idle instances are reused.

A lease held past its timeout is reclaimed: the instance is closed (a device session torn down) and
its slot freed, and the late holder's ``release`` is refused with ``LeaseExpired``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from producers.backends.base import Backend

BackendFactory = Callable[[], Backend]


class PoolExhausted(RuntimeError):
    """Every slot of a backend kind stayed leased for the whole wait."""


class LeaseExpired(RuntimeError):
    """The lease ran past its timeout and its instance was reclaimed."""


@dataclass
class Lease:
    """One instance lent to ``holder`` until ``deadline`` (monotonic seconds)."""

    kind: str
    backend: Backend
    holder: str
    deadline: float
    id: int


@dataclass(frozen=True)
class PoolUsage:
    """Usage of one backend kind, for ``flywheel status``."""

    kind: str
    cap: int
    leased: int
    idle: int
    created: int
    closed: int
    expired: int
    leases: int


@dataclass
class _Kind:
    factory: BackendFactory
    cap: int
    idle: list[Backend] = field(default_factory=list)
    leased: dict[int, Lease] = field(default_factory=dict)
    created: int = 0
    closed: int = 0
    expired: int = 0
    leases: int = 0


class EnvironmentPool:
    """Thread-safe; ``acquire`` blocks up to ``wait_s`` for a free slot."""

    def __init__(self, lease_timeout_s: float = 900.0, max_idle: int = 4) -> None:
        self.lease_timeout_s = lease_timeout_s
        self.max_idle = max_idle
        self._kinds: dict[str, _Kind] = {}
        self._cond = threading.Condition()
        self._ids = 0

    def register(self, kind: str, factory: BackendFactory, cap: int) -> None:
        if cap < 1:
            raise ValueError(f"the concurrency cap of {kind} must be at least 1, got {cap}")
        with self._cond:
            self._kinds[kind] = _Kind(factory, cap)

    def kinds(self) -> list[str]:
        return sorted(self._kinds)

    def acquire(self, kind: str, holder: str, wait_s: float = 60.0) -> Lease:
        if kind not in self._kinds:
            raise KeyError(f"no backend {kind!r} in this pool; available: {', '.join(self.kinds()) or 'none'}")
        entry = self._kinds[kind]
        deadline = time.monotonic() + wait_s
        with self._cond:
            while True:
                self._reclaim_expired(entry)
                if len(entry.leased) < entry.cap:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PoolExhausted(f"all {entry.cap} {kind} instances stayed leased for {wait_s:.0f} s")
                self._cond.wait(min(left, 0.5))
            backend = entry.idle.pop() if entry.idle else None
        if backend is None:
            backend = entry.factory()  # outside the lock: creating a device session can be slow
            with self._cond:
                entry.created += 1
        with self._cond:
            self._ids += 1
            lease = Lease(kind, backend, holder, time.monotonic() + self.lease_timeout_s, self._ids)
            entry.leased[lease.id] = lease
            entry.leases += 1
        return lease

    def release(self, lease: Lease, *, broken: bool = False) -> None:
        """Return the instance for reuse (the next episode resets it), or close it when ``broken``."""
        entry = self._kinds[lease.kind]
        with self._cond:
            if entry.leased.pop(lease.id, None) is None:
                raise LeaseExpired(f"lease {lease.id} of {lease.kind} expired and its instance was reclaimed")
            keep = not broken and len(entry.idle) < self.max_idle
            if keep:
                entry.idle.append(lease.backend)
            self._cond.notify_all()
        if not keep:
            self._close(entry, lease.backend)

    @contextmanager
    def lease(self, kind: str, holder: str, wait_s: float = 60.0) -> Iterator[Backend]:
        taken = self.acquire(kind, holder, wait_s)
        try:
            yield taken.backend
        except BaseException:
            self.release(taken, broken=True)
            raise
        self.release(taken)

    def usage(self) -> list[PoolUsage]:
        with self._cond:
            for entry in self._kinds.values():
                self._reclaim_expired(entry)
            return [
                PoolUsage(kind, e.cap, len(e.leased), len(e.idle), e.created, e.closed, e.expired, e.leases)
                for kind, e in sorted(self._kinds.items())
            ]

    def close(self) -> None:
        with self._cond:
            doomed = [
                (e, b) for e in self._kinds.values() for b in [*e.idle, *(lease.backend for lease in e.leased.values())]
            ]
            for entry in self._kinds.values():
                entry.idle.clear()
                entry.leased.clear()
        for entry, backend in doomed:
            self._close(entry, backend)

    def _reclaim_expired(self, entry: _Kind) -> None:
        now = time.monotonic()
        for lease_id, lease in list(entry.leased.items()):
            if lease.deadline <= now:
                del entry.leased[lease_id]
                entry.expired += 1
                self._close(entry, lease.backend)

    @staticmethod
    def _close(entry: _Kind, backend: Backend) -> None:
        entry.closed += 1
        try:
            backend.close()
        except Exception:  # noqa: BLE001 - a backend that fails to close must not wedge the pool
            pass
