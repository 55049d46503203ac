"""A rollout worker process for the tests: the real RolloutWorker, with a per-step delay so a test can kill it
mid-episode."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

from harness_service.policy.base import Policy, PolicyOutput
from infra.bootstrap import Ports, open_blob_store, open_bus
from infra.config import Settings
from producers.backends.sandbox import SandboxBackend
from producers.pool import EnvironmentPool
from producers.rollout import RolloutWorker
from producers.rollout.versions import VersionResolver

STALE_AFTER_S = 3.0
"""An open attempt silent this long is a dead worker's (each step of the slow policy writes well within it)."""


class SlowPolicy:
    """Delays each call of the wrapped policy, so an episode spans long enough to be interrupted. Each call first
    touches ``heartbeat`` (when set): a test that sees it fresh knows the worker is mid-episode."""

    def __init__(self, inner: Policy, delay_s: float, heartbeat: Path | None = None) -> None:
        self.inner, self.delay_s, self.name, self.model = inner, delay_s, inner.name, inner.model
        self.heartbeat = heartbeat

    def observe(self, observation) -> None:
        self.inner.observe(observation)  # type: ignore[attr-defined]

    def generate(self, messages) -> PolicyOutput:
        if self.heartbeat is not None:
            self.heartbeat.touch()
        time.sleep(self.delay_s)
        return self.inner.generate(messages)


class SlowResolver(VersionResolver):
    delay_s = 0.0
    heartbeat: Path | None = None

    def policy(self, ref: str):  # type: ignore[override]
        inner = super().policy(ref)
        return lambda task: SlowPolicy(inner(task), self.delay_s, self.heartbeat)


def main(bus_url: str, blob_url: str, state_dir: str, name: str, delay_s: float, idle_exit_s: float, out: str) -> None:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {name} %(levelname)s %(message)s")
    stack = Settings().stack
    settings = Settings(s3_access_key=stack.s3_access_key, s3_secret_key=stack.s3_secret_key)
    bus = open_bus(bus_url, settings)
    ports = Ports(bus, open_blob_store(blob_url, settings), None)  # type: ignore[arg-type]
    resolver = SlowResolver(None, bus, Path(state_dir))
    resolver.delay_s = delay_s
    resolver.heartbeat = Path(f"{out}.step")
    pool = EnvironmentPool()
    pool.register("sandbox", SandboxBackend, 1)
    worker = RolloutWorker(
        ports, pool, name=name, state_dir=Path(state_dir), resolver=resolver, stale_after_s=STALE_AFTER_S
    )
    stats = worker.run(idle_exit_s=idle_exit_s)
    worker.close()
    bus.close()
    Path(out).write_text(json.dumps(stats.__dict__))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), float(sys.argv[6]), sys.argv[7])
