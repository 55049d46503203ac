"""Pool usage written by each worker process to the state directory, read by ``flywheel status``."""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from pathlib import Path

import orjson

from producers.pool.pool import EnvironmentPool, PoolUsage

SNAPSHOT_GLOB = "pool-*.json"


def write_snapshot(pool: EnvironmentPool, state_dir: Path, worker: str) -> Path:
    """Atomically replace this worker's snapshot (rename), so a reader never sees half a file."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / f"pool-{worker}.json"
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    data = {"worker": worker, "pid": os.getpid(), "at": time.time(), "kinds": [asdict(u) for u in pool.usage()]}
    tmp.write_bytes(orjson.dumps(data))
    tmp.replace(path)
    return path


def read_snapshots(state_dir: Path, max_age_s: float = 120.0) -> list[tuple[str, float, list[PoolUsage]]]:
    """(worker, age in seconds, usage) of every snapshot younger than ``max_age_s``."""
    found = []
    for path in sorted(state_dir.glob(SNAPSHOT_GLOB)):
        try:
            data = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        age = time.time() - float(data["at"])
        if age <= max_age_s:
            found.append((str(data["worker"]), age, [PoolUsage(**k) for k in data["kinds"]]))
    return found
