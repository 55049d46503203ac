"""Ports for tests, and private stacks for tests that stop or break servers (own ports, a tmp dir, the shared jar
cache).

The rule for every port a test listens on or connects to: it lies BELOW Linux's ephemeral range
(``net.ipv4.ip_local_port_range``, 32768-60999 by default). The kernel hands ports of that range to outgoing
connections, so a server port inside it can be taken at any moment by some client's source port - even by a
client reconnecting to that very port while its server is down (a TCP self-connect on loopback), after which
the server cannot bind it again. ``flywheel stack`` defaults (19092/19093, 18333-18341 + 28341, 15000) obey it.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from infra.config import StackSettings

REPO = Path(__file__).resolve().parents[1]
SHARED_CACHE = Path(os.environ.get("FLYWHEEL_STACK_CACHE_DIR") or REPO / ".stack" / "cache")

# Bands below the ephemeral range, disjoint from each other and from the default stack's ports.
S3_BASES = (20000, 21400)  # a private S3 store binds base..base+8 and base+10008 (gRPC): at most 31408
KAFKA_BASES = (21500, 23500)  # broker base, controller base+1
MLFLOW_PORTS = (23500, 24500)
FREE_PORTS = (24500, 28000)  # anything else a test serves on, or a port nothing listens on


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections' source ports."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


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
    """A base port B in [lo, hi) such that every B+offset is free and below the ephemeral range."""
    low, high = ephemeral_range()
    if hi + max(offsets) > low and lo <= high:
        raise RuntimeError(f"test ports {lo}..{hi + max(offsets)} overlap the ephemeral range {low}-{high}")
    span = hi - lo
    start = lo + (os.getpid() * 37) % span
    for i in range(0, span, 11):
        base = lo + (start - lo + i) % span
        if ports_free([base + o for o in offsets]):
            return base
    raise RuntimeError(f"no free ports in {lo}-{hi}")


def free_port() -> int:
    """A free loopback port below the ephemeral range: for a server a test starts, or one nothing listens on."""
    return free_base([0], *FREE_PORTS)


def private_stack_settings(tmp_path: Path, **extra) -> StackSettings:
    s3 = free_base([*range(0, 9), 10008], *S3_BASES)
    kafka = free_base([0, 1], *KAFKA_BASES)
    mlflow = free_base([0], *MLFLOW_PORTS)
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
