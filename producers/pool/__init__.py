"""The environment pool: backend instances created, leased, reset, reclaimed and cleaned up under caps."""

from producers.pool.pool import EnvironmentPool, Lease, LeaseExpired, PoolExhausted, PoolUsage
from producers.pool.snapshot import read_snapshots, write_snapshot

__all__ = ["EnvironmentPool", "Lease", "LeaseExpired", "PoolExhausted", "PoolUsage", "read_snapshots", "write_snapshot"]
