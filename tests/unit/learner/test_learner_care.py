"""CARE: rewards follow competence as documented, advantages match a hand computation, the controller is bounded."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bus_schemas.codec import decode, encode
from bus_schemas.envelope import Producer
from learner.care import (
    SCHEDULES,
    AdvantageSettings,
    ControllerInputs,
    EpisodeCost,
    Scored,
    calibrate,
    choose_schedule,
    competence_gate,
    measure_competence,
    shaped_reward,
)
from learner.care.rewards import COST_CAP
from learner.care.schedules import SCHEDULE_BY_NAME, RewardSchedule

pytestmark = pytest.mark.unit
COST = EpisodeCost(output_tokens=200, thinking_tokens=0, tool_calls=3, steps=4)
AWARE = SCHEDULE_BY_NAME["cost_aware"]


def test_the_gate_is_closed_for_beginners_open_for_experts_and_linear_between() -> None:
    assert competence_gate(0.0) == 0.0
    assert competence_gate(0.3) == 0.0
    assert competence_gate(0.55) == pytest.approx(0.5)
    assert competence_gate(0.8) == 1.0
    assert competence_gate(1.0) == 1.0
    with pytest.raises(ValueError):
        competence_gate(0.5, low=0.8, high=0.3)


def test_cost_terms_grow_with_competence_and_never_touch_failures() -> None:
    charged = [shaped_reward(True, 1.0, COST, c, AWARE).cost for c in (0.1, 0.4, 0.6, 0.9)]
    assert charged[0] == 0.0 and charged == sorted(charged) and charged[-1] > charged[1] > 0
    # full gate at competence 0.9: raw cost 0.1*200/100 + 0.05*3 + 0.02*4, saturated below COST_CAP
    assert charged[-1] == pytest.approx(COST_CAP * (1 - math.exp(-(0.2 + 0.15 + 0.08))))
    failed = shaped_reward(False, 0.5, COST, 0.9, AWARE)
    assert failed.cost == 0.0 and failed.total == 0.0


def test_partial_credit_adds_the_fraction_of_criteria_passed() -> None:
    breakdown = shaped_reward(False, 0.5, COST, 0.0, SCHEDULE_BY_NAME["partial_credit"])
    assert breakdown.total == pytest.approx(0.25)


def test_advantages_match_a_hand_computed_example() -> None:
    scored = [
        Scored("a1", "g1", "tool_use", 1.0),
        Scored("a2", "g1", "tool_use", 0.0),
        Scored("a3", "g1", "tool_use", 0.0),
        Scored("a4", "g1", "tool_use", 1.0),
        Scored("b1", "g2", "memory", 1.0),
        Scored("b2", "g2", "memory", 1.0),  # zero variance: dropped
        Scored("c1", "g3", "memory", 2.0),
        Scored("c2", "g3", "memory", 0.0),
        Scored("c3", "g3", "memory", 0.0),
    ]
    competence = {"tool_use": 0.8, "memory": 0.3}
    adv = calibrate(scored, competence, AdvantageSettings(clip=1.2))
    # g1: mean 0.5, std 0.5 -> +-1; tool_use scale 1 + (0.8 - 0.8) = 1
    assert adv["a1"] == pytest.approx(1.0) and adv["a2"] == pytest.approx(-1.0)
    assert "b1" not in adv and "b2" not in adv
    # g3: mean 2/3, std sqrt(8/9); memory scale 1 + (0.8 - 0.3) = 1.5
    std = math.sqrt(((2 - 2 / 3) ** 2 + 2 * (2 / 3) ** 2) / 3)
    assert adv["c2"] == pytest.approx(1.5 * (0 - 2 / 3) / std)
    assert adv["c1"] == pytest.approx(1.2)  # 1.5 * 1.414 clipped
    assert set(adv) == {"a1", "a2", "a3", "a4", "c1", "c2", "c3"}


def test_competence_is_the_success_rate_per_capability_keeping_priors() -> None:
    measured = measure_competence([("tool_use", True), ("tool_use", False), ("memory", True)], {"skills": 0.4})
    assert measured == {"tool_use": 0.5, "memory": 1.0, "skills": 0.4}


def choose(inputs: ControllerInputs, current: str, **kwargs):
    return choose_schedule(
        inputs,
        SCHEDULE_BY_NAME[current],
        model_name="planner",
        run_id="r",
        producer=Producer(service="t", version="1"),
        **kwargs,
    )


@pytest.mark.parametrize(
    ("inputs", "current", "expected"),
    [
        (ControllerInputs(train_success=0.05), "cost_strict", "cost_aware"),  # learn first, one step back only
        (ControllerInputs(train_success=0.05), "partial_credit", "partial_credit"),  # bounded at the list's start
        (ControllerInputs(train_success=0.9), "partial_credit", "outcome_only"),  # one step forward only
        (ControllerInputs(train_success=0.9), "cost_strict", "cost_strict"),
        (ControllerInputs(train_success=0.4), "cost_aware", "cost_aware"),
        (ControllerInputs(train_success=0.9, dev_overall=0.3, previous_dev_overall=0.5), "cost_aware", "outcome_only"),
    ],
)
def test_rule_controller_moves_at_most_one_step(inputs: ControllerInputs, current: str, expected: str) -> None:
    chosen, event = choose(inputs, current)
    assert chosen.name == expected == event.schedule
    assert event.previous == current and event.chooser == "rules"
    assert event.inputs["train_success"] == inputs.train_success
    assert decode(encode(event)) == event


def test_a_schedule_model_is_bounded_and_checked() -> None:
    chosen, event = choose(ControllerInputs(train_success=0.0), "partial_credit", model=lambda i, c: "cost_strict")
    assert chosen.name == "outcome_only" and event.chooser == "model"
    with pytest.raises(ValueError, match="unknown schedule"):
        choose(ControllerInputs(train_success=0.0), "partial_credit", model=lambda i, c: "yolo")
    assert [s.cost_weight for s in SCHEDULES] == sorted(s.cost_weight for s in SCHEDULES)


costs = st.builds(
    EpisodeCost, st.integers(0, 10**7), st.integers(0, 10**7), st.integers(0, 10**5), st.integers(0, 10**5)
)
schedules = st.one_of(
    st.sampled_from(SCHEDULES),
    st.builds(
        RewardSchedule,
        name=st.just("random"),
        partial_credit=st.floats(0.0, 0.999),
        cost_weight=st.floats(0.0, 1e6),
        token_cost=st.floats(0.0, 1e3),
        tool_call_cost=st.floats(0.0, 1e3),
        step_cost=st.floats(0.0, 1e3),
        token_scale=st.floats(1e-3, 1e4),
    ),
)


@settings(max_examples=400, deadline=None)
@given(
    schedule=schedules,
    win=costs,
    loss=costs,
    win_score=st.floats(0.0, 1.0),
    loss_score=st.floats(0.0, 1.0),
    win_competence=st.floats(0.0, 1.0),
    loss_competence=st.floats(0.0, 1.0),
)
def test_any_success_scores_above_any_failure(
    schedule,
    win,
    loss,
    win_score,
    loss_score,
    win_competence,  # noqa: ANN001
    loss_competence,
) -> None:
    success = shaped_reward(True, win_score, win, win_competence, schedule)
    failure = shaped_reward(False, loss_score, loss, loss_competence, schedule)
    assert success.total > failure.total
    assert failure.cost == 0.0 and 0.0 <= success.cost <= COST_CAP


@settings(max_examples=200, deadline=None)
@given(cost=costs, competence=st.floats(0.0, 0.3))
def test_below_the_competence_gate_successes_pay_no_cost(cost: EpisodeCost, competence: float) -> None:
    for schedule in SCHEDULES:
        assert shaped_reward(True, 1.0, cost, competence, schedule).cost == 0.0


def test_above_the_gate_a_cheaper_success_scores_higher() -> None:
    cheap, dear = EpisodeCost(40, 0, 1, 2), EpisodeCost(400, 0, 6, 8)
    for schedule in SCHEDULES:
        a, b = (shaped_reward(True, 1.0, c, 0.9, schedule).total for c in (cheap, dear))
        assert a > b if schedule.cost_weight > 0 else a == b
