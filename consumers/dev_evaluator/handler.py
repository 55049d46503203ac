"""Pure dev-evaluation logic: group ids, the summary of a finished group, and which version is better.

The round controller asks for a dev evaluation by publishing one RolloutRequested per dev task with a
group id ``dev-eval:<kind>:<policy>:<harness>`` (``kind`` is ``model`` for a newly trained model version,
``harness`` for a harness revision). When every episode of the group is verified, :func:`summarise`
makes the DevSetEvaluated: per-category success, Overall = 0.5*tool_use + 0.2*memory + 0.2*skills +
0.1*sub_agent, tokens and tool calls per task, cost per 1K tasks when every episode had a price.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import DevSetEvaluated, EpisodeEnded, EpisodeVerified, RolloutRequested, TaskSpecified
from bus_schemas.events.training import category_scores, overall_score

VERSION = "0.1.0"
PREFIX = "dev-eval:"
Kind = Literal["model", "harness"]


def group_id(kind: Kind, policy_version: str, harness_version: str) -> str:
    """The rollout group of one dev evaluation; equal inputs give equal ids, so a replay asks for the same group."""
    return f"{PREFIX}{kind}:{policy_version}:{harness_version}"


def kind_of(group: str | None) -> Kind | None:
    """``model`` / ``harness`` for a dev-evaluation group, None for any other rollout group."""
    if group is None or not group.startswith(PREFIX):
        return None
    kind = group[len(PREFIX) :].split(":", 1)[0]
    return kind if kind in ("model", "harness") else None  # type: ignore[return-value]


def model_ref(policy_version: str) -> tuple[str, str]:
    """(model name, version) of a policy ref: ``planner/3`` -> (planner, 3); ``scripted:reference`` -> (scripted,
    reference)."""
    ref = policy_version.removeprefix("models:/")
    for sep in ("/", "@", ":"):
        name, found, version = ref.partition(sep)
        if found and name and version:
            return name, version
    return ref, "unversioned"


def summarise(
    requests: Sequence[RolloutRequested],
    verdicts: dict[str, EpisodeVerified],
    ended: dict[str, EpisodeEnded],
    tasks: dict[str, TaskSpecified],
    cause: Event,
    producer: Producer,
) -> DevSetEvaluated:
    """The DevSetEvaluated of one finished group (every request has a verdict); a category without tasks scores 0/0."""
    first = requests[0]
    wins: dict[str, list[bool]] = defaultdict(list)
    for request in requests:
        wins[tasks[request.task_id].category].append(verdicts[request.episode_id].outcome == "success")
    per_category = category_scores(wins)
    ends = [ended[r.episode_id] for r in requests if r.episode_id in ended]
    n = max(1, len(requests))
    costs = [e.cost_estimate_usd for e in ends]
    priced = bool(costs) and len(ends) == len(requests) and all(c is not None for c in costs)
    name, version = model_ref(first.policy_version)
    return DevSetEvaluated(
        producer=producer,
        run_id=first.run_id,
        round=first.round,
        causation_id=cause.event_id,
        model_name=name,
        model_version=version,
        harness_version=first.harness_version,
        evaluates=kind_of(first.group_id) or "model",
        per_category=per_category,
        overall=overall_score({k: v.success_rate for k, v in per_category.items()}),
        tokens_per_task=sum(e.input_tokens + e.output_tokens + e.thinking_tokens for e in ends) / n,
        tool_calls_per_task=sum(e.tool_calls for e in ends) / n,
        cost_per_1k_tasks_usd=1000 * sum(c or 0.0 for c in costs) / n if priced else None,
    )


def baseline(evaluated: DevSetEvaluated, earlier: Sequence[DevSetEvaluated]) -> DevSetEvaluated | None:
    """What ``evaluated`` competes with.

    A model version competes with the best earlier model evaluation of the run (the version in production);
    a harness revision competes with the best earlier evaluation of the same model version (on the harness in
    production). ``max`` keeps the first of equals, so a tie never promotes.
    """
    others = [e for e in earlier if e.split == evaluated.split and e.event_id != evaluated.event_id]
    if evaluated.evaluates == "model":
        return max((e for e in others if e.evaluates == "model"), key=lambda e: e.overall, default=None)
    same = [e for e in others if (e.model_name, e.model_version) == (evaluated.model_name, evaluated.model_version)]
    return max(same, key=lambda e: e.overall, default=None)


def is_better(evaluated: DevSetEvaluated, earlier: Sequence[DevSetEvaluated]) -> bool:
    """Strictly better than its baseline (no baseline: a first model is better than nothing; a harness is not)."""
    base = baseline(evaluated, earlier)
    if base is None:
        return evaluated.evaluates == "model"
    return evaluated.overall > base.overall
