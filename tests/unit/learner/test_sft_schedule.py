"""One LR schedule over the loop's rounds: each SFT run trains a span of it (``learner.sft.schedule``)."""

from __future__ import annotations

import math

import pytest
from test_sft_history import examples

from infra.loop.config import LoopConfig
from learner.config import LearnerConfig
from learner.model import PromptWindow, TinyModelConfig, build_tiny_model, train_tokenizer
from learner.sft import SftSettings, train_sft
from learner.sft.schedule import ScheduleSpan

pytestmark = pytest.mark.unit


def test_a_span_over_the_whole_schedule_is_transformers_cosine_with_warmup():
    import torch
    from transformers import get_cosine_schedule_with_warmup

    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    cosine = get_cosine_schedule_with_warmup(optimizer, math.ceil(400 * 0.05), 400).lr_lambdas[0]
    span = ScheduleSpan(0, 400, 400)
    assert [span.factor(i) for i in range(400)] == pytest.approx([cosine(i) for i in range(400)], abs=1e-12)


def test_later_spans_continue_the_schedule_after_their_own_short_ramp():
    whole = ScheduleSpan(0, 1600, 1600)
    first, second, third = ScheduleSpan(0, 1200, 1600), ScheduleSpan(1200, 200, 1600), ScheduleSpan(1400, 200, 1600)
    assert [first.factor(i) for i in range(1200)] == [whole.factor(i) for i in range(1200)]
    ramp = math.ceil(200 * 0.05)
    for span in (second, third):
        assert [span.factor(i) for i in range(ramp, 200)] == [whole.factor(span.start + i) for i in range(ramp, 200)]
        ramped = [span.factor(i) / whole.factor(span.start + i) for i in range(ramp)]
        assert ramped == sorted(ramped) and ramped[0] < 0.2 and ramped[-1] == pytest.approx(1.0)
    assert second.factor(0) < first.factor(1199)  # a fresh optimizer does not start at the schedule's rate
    assert third.factor(199) < 1e-5  # the last round ends the schedule's decay


@pytest.mark.parametrize(("start", "steps", "total"), [(1500, 200, 1600), (-1, 10, 100), (0, 0, 100)])
def test_a_span_outside_its_schedule_is_refused(start, steps, total):
    with pytest.raises(ValueError, match="not within a schedule"):
        ScheduleSpan(start, steps, total)


def test_the_learner_gives_each_round_its_span_of_the_loops_schedule():
    cold, continued = SftSettings(max_steps=1200, learning_rate=3e-3), SftSettings(max_steps=200, learning_rate=1e-3)
    base = LearnerConfig(sft=cold, continued_sft=continued)
    assert base.sft_settings(1, continued=True) == base.continued_sft  # no schedule_rounds: each run its own
    config = base.model_copy(update={"schedule_rounds": 3})
    cold = config.sft_settings(0, continued=False)
    spans = [config.sft_settings(r, continued=True) for r in (1, 2)]
    assert (cold.schedule_start, cold.schedule_total, cold.max_steps) == (0, 1600, 1200)
    assert [(s.schedule_start, s.schedule_total, s.max_steps) for s in spans] == [(1200, 1600, 200), (1400, 1600, 200)]
    assert {s.learning_rate for s in (cold, *spans)} == {3e-3}  # the schedule's peak, not continued_sft's own
    with pytest.raises(ValueError, match="outside the schedule"):
        config.sft_settings(3, continued=True)


def test_the_loop_sets_the_schedule_rounds_for_sft_only():
    assert LoopConfig(rounds=4, one_schedule=True).trainer_learner().schedule_rounds == 4
    assert LoopConfig(rounds=4, one_schedule=False).trainer_learner().schedule_rounds is None
    assert LoopConfig(rounds=4, one_schedule=True, algorithm="rl").trainer_learner().schedule_rounds is None


def test_an_sft_run_follows_its_span_of_the_schedule(tmp_path):
    rows = examples(24)
    tokenizer = train_tokenizer([e.prompt + e.completion for e in rows] * 4, vocab_size=300)
    model = build_tiny_model(tokenizer, TinyModelConfig(hidden_size=32))
    settings = SftSettings(
        max_steps=8, batch_size=4, logging_steps=1, learning_rate=1e-2, schedule_start=12, schedule_total=24
    )
    result = train_sft(model, tokenizer, rows, tmp_path / "ckpt", settings=settings, window=PromptWindow())
    span = ScheduleSpan(12, 8, 24)
    logged = [values["learning_rate"] for _, values in result.history]
    assert len(logged) == 8
    # the rate logged at optimizer step s is the one step s trained with (the span's 0-based step s - 1)
    assert logged == pytest.approx([1e-2 * span.factor(step - 1) for step, _ in result.history], rel=1e-6)
    assert logged[-1] < 0.5e-2  # past the schedule's middle: below half the peak, where its own cosine is not


def test_a_loop_on_one_schedule_needs_step_counts_to_lay_it_out():
    from pydantic import ValidationError

    learner = LearnerConfig(sft=SftSettings(max_steps=-1, epochs=3.0))
    with pytest.raises(ValidationError, match="one_schedule needs max_steps"):
        LoopConfig(learner=learner)
    assert LoopConfig(learner=learner, one_schedule=False).trainer_learner().schedule_rounds is None
    assert LoopConfig(learner=learner, algorithm="rl").trainer_learner().schedule_rounds is None
