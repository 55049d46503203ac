"""Faults under the embedded log: a full disk (a clear error, and the file still opens and replays what was
acknowledged) and a write interrupted by a signal handler's exception (the next write still works)."""

from __future__ import annotations

import sqlite3
import sys

import pytest

from infra.bootstrap import open_bus
from infra.bus.errors import BusWriteError
from infra.bus.records import OutgoingRecord

pytestmark = pytest.mark.unit


def test_a_full_disk_fails_the_write_clearly_and_corrupts_nothing(tmp_path):
    url = f"sqlite:///{tmp_path}/bus.db?max_bytes=400000"
    bus = open_bus(url)
    acknowledged = []
    with pytest.raises(BusWriteError, match="full") as err:
        for i in range(10_000):
            bus.publish_many([OutgoingRecord("episodes", f"{i}-{j}".encode() * 40, key=b"k") for j in range(10)])
            acknowledged.extend(f"{i}-{j}" for j in range(10))
    assert str(tmp_path / "bus.db") in str(err.value)
    assert acknowledged, "some batches must fit before the disk fills"
    bus.close()

    assert sqlite3.connect(tmp_path / "bus.db").execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    reopened = open_bus(f"sqlite:///{tmp_path}/bus.db")
    replayed = [r.value[: len(r.value) // 40].decode() for r in reopened.replay("episodes")]
    assert replayed == acknowledged  # one key, one partition: exactly what was acknowledged, in order
    reopened.close()


def test_an_exit_raised_right_after_a_write_began_leaves_no_transaction_open(tmp_path):
    """SIGTERM's handler in ``flywheel run`` raises SystemExit between any two statements. Raised right after a
    write's BEGIN (a clean-clone CI run, 2026-12-08), it left the transaction open, and the run's cleanup failed with
    "cannot start a transaction within a transaction" instead of exiting 143. A profile hook raises it there."""
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    bus.publish(OutgoingRecord("episodes", b"before", key=b"k"))

    def exit_after_begin(frame, event, arg):
        if event == "c_return" and frame.f_code.co_name == "_write" and getattr(arg, "__name__", "") == "execute":
            sys.setprofile(None)
            raise SystemExit(143)

    sys.setprofile(exit_after_begin)
    try:
        with pytest.raises(SystemExit):
            bus.publish(OutgoingRecord("episodes", b"interrupted", key=b"k"))
    finally:
        sys.setprofile(None)
    bus.publish(OutgoingRecord("episodes", b"after", key=b"k"))
    assert [r.value for r in bus.replay("episodes")] == [b"before", b"after"]
    bus.close()
