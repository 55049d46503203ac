"""Who counts as alive in an embedded consumer group: busy members stay (their heartbeat thread runs between polls;
the contract suite checks that on both buses); a member dropped without ``close`` or stuck past the poll interval
expires, so its partitions move on."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest

from infra.bootstrap import open_bus
from infra.bus import embedded
from infra.bus.records import TopicLayout

pytestmark = pytest.mark.unit

SESSION_S = 0.4


def _bus(tmp_path):
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db?session_timeout_s={SESSION_S}")
    bus.create_topics([TopicLayout("t", 4)])
    return bus


def _takes_everything(consumer, within_s: float = 10.0) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        consumer.poll(timeout_s=0.05)
        if len(consumer.assignment()) == 4:
            return True
    return False


class _Member:
    """What the heartbeat loop needs of a member: a heartbeat."""

    def __init__(self) -> None:
        self.beats = 0

    def heartbeat_if_polling(self) -> bool:
        self.beats += 1
        return True


def test_a_member_dropped_without_close_stops_heartbeating():
    """The loop holds the member weakly: a member nobody holds any more expires like a dead one (the test suite
    itself keeps every consumer it opens until the test ends, so this drives the loop with a plain member)."""
    member = _Member()
    thread = threading.Thread(target=embedded._heartbeat_loop, args=(weakref.ref(member), threading.Event(), 0.01))
    thread.start()
    end = time.monotonic() + 10
    while member.beats < 3 and time.monotonic() < end:
        time.sleep(0.01)
    assert member.beats >= 3, "the loop never heartbeated"
    del member
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive(), "the loop kept running for a member nobody holds"


def test_a_member_stuck_past_the_poll_interval_loses_its_partitions(tmp_path):
    bus = _bus(tmp_path)
    stuck = bus.consumer("g", ["t"], max_poll_interval_s=3 * SESSION_S)
    peer = bus.consumer("g", ["t"])
    stuck.poll(timeout_s=0.05)
    peer.poll(timeout_s=0.05)
    assert len(peer.assignment()) < 4
    # busy for 2 session timeouts: still a member; past the poll interval (3): gone
    time.sleep(2 * SESSION_S)
    peer.poll(timeout_s=0.05)
    assert len(peer.assignment()) < 4, "a member busy for less than the poll interval lost its partitions"
    assert _takes_everything(peer), "a member stuck past the poll interval kept its partitions"
    stuck.close()
    peer.close()
    bus.close()
