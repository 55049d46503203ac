"""Private stacks for tests that stop or break servers: free non-default ports, a tmp dir, the shared jar cache."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from infra.config import StackSettings

REPO = Path(__file__).resolve().parents[1]
SHARED_CACHE = Path(os.environ.get("FLYWHEEL_STACK_CACHE_DIR") or REPO / ".stack" / "cache")


def ports_free(ports: list[int]) -> bool:
    for port in ports:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is not "taken"
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def free_base(offsets: list[int], lo: int, hi: int) -> int:
    """A base port B such that every B+offset is free (scanned from a pid-dependent start)."""
    span = hi - lo
    start = lo + (os.getpid() * 37) % span
    for i in range(0, span, 11):
        base = lo + (start - lo + i) % span
        if ports_free([base + o for o in offsets]):
            return base
    raise RuntimeError("no free ports")


def private_stack_settings(tmp_path: Path, **extra) -> StackSettings:
    s3 = free_base([*range(0, 9), 10008], 31000, 38000)
    kafka = free_base([0, 1], 41000, 45000)
    mlflow = free_base([0], 45000, 48000)
    values = dict(
        dir=tmp_path / "stack",
        kafka_port=kafka,
        kafka_controller_port=kafka + 1,
        s3_port=s3,
        mlflow_port=mlflow,
        ready_timeout_s=90.0,
        stop_grace_s=10.0,
        cache_dir=SHARED_CACHE,
    )
    values.update(extra)
    return StackSettings(**values)
