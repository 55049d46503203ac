"""Which rounds are the model's: those a scripted policy (the cold start) rolled out are not."""

from __future__ import annotations

import pytest

from bus_schemas.envelope import Producer
from bus_schemas.events import RoundCompleted, RoundStarted, before_round, is_scripted, scripted_rounds

pytestmark = pytest.mark.unit
P = Producer(service="test", version="0")


def _started(round_: int, policy: str) -> RoundStarted:
    return RoundStarted(
        producer=P, run_id="r", round=round_, policy_version=policy, harness_version="h", planned_rollouts=1
    )


def test_scripted_rounds_are_those_a_scripted_policy_rolled_out():
    done = RoundCompleted(producer=P, run_id="r", round=3, episodes=1, success_rate=0.0, wall_time_s=0.0)
    events = [_started(0, "scripted:reference"), _started(1, "planner/1"), _started(2, "scripted:other"), done]
    assert scripted_rounds(events) == {0, 2}
    assert scripted_rounds([]) == set()
    assert is_scripted("scripted:reference") and not is_scripted("planner/1") and not is_scripted("local:/scripted:")


def test_a_round_sees_what_came_before_it_not_its_own_answers():
    assert before_round(None, 0) and before_round(None, 3)  # suite tasks belong to every round's pool
    assert before_round(0, 1) and before_round(1, 3)
    assert not before_round(2, 2) and not before_round(3, 2)
