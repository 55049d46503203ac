"""Round events (topic ``rounds``): the controller opening and closing each turn of the loop."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import Field

from bus_schemas.envelope import Count, Event, Name, Probability


class RoundStarted(Event):
    """A round began with these versions and this many planned rollouts."""

    event_type: Literal["RoundStarted"] = "RoundStarted"
    schema_version: Literal[1] = 1
    round: Annotated[int, Field(ge=0)]
    policy_version: Name
    harness_version: Name
    planned_rollouts: Count
    sampling_plan_id: Name | None = None


class RoundCompleted(Event):
    """A round closed: what it produced and how the policy did."""

    event_type: Literal["RoundCompleted"] = "RoundCompleted"
    schema_version: Literal[1] = 1
    round: Annotated[int, Field(ge=0)]
    episodes: Count
    success_rate: Probability
    model_version_out: Name | None = None  # the model trained in this round, if any
    harness_version_out: Name | None = None
    dev_overall: Probability | None = None
    wall_time_s: Annotated[float, Field(ge=0.0)]


def is_scripted(policy_version: str) -> bool:
    """Is this policy ref a scripted policy (``scripted:reference``: the cold start's demonstrations), not a model?"""
    return policy_version.startswith("scripted:")


def before_round(event_round: int | None, round: int) -> bool:
    """Is an event of round ``event_round`` (None: of no round, e.g. a suite task) part of what round ``round``
    is planned and drawn over? Events of the round itself are not: a round's plan and its draw see the same
    pool, whatever of the round's own answers (tasks generated for its requests, its verdicts) has arrived."""
    return event_round is None or event_round < round


def scripted_rounds(events: Iterable[Event]) -> set[int]:
    """The rounds a scripted policy rolled out, from the RoundStarted among ``events`` (the rest are ignored):
    their episodes are demonstrations, not the model's own."""
    return {e.round for e in events if isinstance(e, RoundStarted) and is_scripted(e.policy_version)}
