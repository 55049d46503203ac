"""A full disk under the embedded log: a clear error, and the file still opens and replays what was acknowledged."""

from __future__ import annotations

import sqlite3

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
