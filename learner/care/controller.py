"""The bounded schedule controller: picks one of ``SCHEDULES`` from training and dev feedback, one step at a time.

Rules (the default chooser), applied to the current schedule's position in ``SCHEDULES``:
1. dev Overall fell by more than ``regression`` since the last decision -> one step back (less cost pressure);
2. training success below ``learn_below`` -> one step towards ``partial_credit`` (learn to succeed first);
3. training success at or above ``tighten_at`` -> one step towards ``cost_strict`` (then to be cheap);
4. otherwise stay.
A configured model may propose any schedule; the controller still moves at most one step towards it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from bus_schemas.envelope import Producer
from bus_schemas.events.training import RewardScheduleSelected
from learner.care.schedules import SCHEDULE_BY_NAME, SCHEDULES, RewardSchedule


@dataclass(frozen=True)
class ControllerInputs:
    """What a decision looks at; every field is logged on the event."""

    train_success: float
    dev_overall: float | None = None
    previous_dev_overall: float | None = None
    competence: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, float]:
        values = {"train_success": self.train_success}
        if self.dev_overall is not None:
            values["dev_overall"] = self.dev_overall
        if self.previous_dev_overall is not None:
            values["previous_dev_overall"] = self.previous_dev_overall
        values.update({f"competence/{k}": v for k, v in sorted(self.competence.items())})
        return values


ScheduleModel = Callable[[ControllerInputs, RewardSchedule], str]
"""A learned chooser: returns the name of the schedule it wants (bounded by the controller)."""


@dataclass(frozen=True)
class RuleController:
    """Thresholds of the default rules."""

    learn_below: float = 0.2
    tighten_at: float = 0.6
    regression: float = 0.05

    def propose(self, inputs: ControllerInputs, current: RewardSchedule) -> tuple[int, str]:
        """(direction -1/0/+1 along SCHEDULES, reason)."""
        dev, before = inputs.dev_overall, inputs.previous_dev_overall
        if dev is not None and before is not None and before - dev > self.regression:
            return -1, f"dev overall fell {before:.3f} -> {dev:.3f}: less cost pressure"
        if inputs.train_success < self.learn_below:
            return -1, f"train success {inputs.train_success:.2f} < {self.learn_below}: learn to succeed first"
        if inputs.train_success >= self.tighten_at:
            return 1, f"train success {inputs.train_success:.2f} >= {self.tighten_at}: more cost pressure"
        return 0, "within thresholds: keep"


def _position(name: str) -> int:
    return [s.name for s in SCHEDULES].index(name)


def choose_schedule(
    inputs: ControllerInputs,
    current: RewardSchedule,
    *,
    model_name: str,
    run_id: str,
    producer: Producer,
    rules: RuleController | None = None,
    model: ScheduleModel | None = None,
    chooser_name: str = "model",
) -> tuple[RewardSchedule, RewardScheduleSelected]:
    """The next schedule (at most one step from ``current``) and the event recording the choice and its inputs."""
    here = _position(current.name)
    if model is not None:
        wanted = model(inputs, current)
        if wanted not in SCHEDULE_BY_NAME:
            raise ValueError(f"schedule model proposed unknown schedule {wanted!r}; known: {list(SCHEDULE_BY_NAME)}")
        target = _position(wanted)
        direction = (target > here) - (target < here)
        reason, chooser = f"model proposed {wanted}", chooser_name
    else:
        direction, reason = (rules or RuleController()).propose(inputs, current)
        chooser = "rules"
    chosen = SCHEDULES[min(len(SCHEDULES) - 1, max(0, here + direction))]
    event = RewardScheduleSelected(
        producer=producer,
        run_id=run_id,
        model_name=model_name,
        schedule=chosen.name,
        previous=current.name,
        chooser=chooser,
        inputs=inputs.as_dict(),
        reason=reason,
    )
    return chosen, event
