"""Pure dev-evaluation logic: group ids, the summary of a finished group, and which version is better.

The round controller asks for a dev evaluation by publishing one RolloutRequested per dev task with a
group id ``dev-eval:<kind>:<policy>:<harness>`` (``kind`` is ``model`` for a newly trained model version,
``harness`` for a harness revision). When every episode of the group is verified, :func:`summarise`
makes the DevSetEvaluated: per-category success, Overall = 0.5*tool_use + 0.2*memory + 0.2*skills +
0.1*sub_agent, tokens and tool calls per task, cost per 1K tasks when every episode had a price.

A harness revision is proven by a paired A/B (:func:`compare_paired`): its dev episodes against its parent
version's with the same model checkpoint on the same task instances (same seeds), per task. It goes to
``@production`` only when the paired difference in Overall is not negative (:func:`revision_decided`, an event).
"""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from bus_schemas.envelope import Event, Producer, correlate
from bus_schemas.events import (
    OVERALL_WEIGHTS,
    DevSetEvaluated,
    EpisodeEnded,
    EpisodeVerified,
    HarnessRevisionDecided,
    RolloutRequested,
    TaskSpecified,
)
from bus_schemas.events.training import CategoryScore, category_scores, overall_score

VERSION = "0.2.0"  # 0.2.0: harness revisions are promoted on a paired A/B against their parent
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
    """The DevSetEvaluated of one finished group (every request has a verdict); a category without tasks scores 0/0.
    Tasks of external suites (``source.kind == "external"``) score under their backend in ``external``, not in the
    categories or Overall."""
    first = requests[0]
    wins: dict[str, list[bool]] = defaultdict(list)
    suites: dict[str, list[bool]] = defaultdict(list)
    for request in requests:
        task = tasks[request.task_id]
        won = verdicts[request.episode_id].outcome == "success"
        (suites[task.backend] if task.source.kind == "external" else wins[task.category]).append(won)
    per_category = category_scores(wins)
    external = {name: CategoryScore(success_rate=sum(w) / len(w), tasks=len(w)) for name, w in sorted(suites.items())}
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
        external=external,
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


AB_DECIDER = "auto:paired_ab"
"""``decided_by`` of the A/B decision (``auto:``: the reviser does not publish on it; it was published already)."""
BOOTSTRAP_SAMPLES = 2000
INTERVAL = 0.95


@dataclass(frozen=True)
class PairedResult:
    """A revision against its parent on the same tasks: Overall of each over the paired tasks, their difference
    (revision - parent) with a ``INTERVAL`` paired-bootstrap interval, and the tasks only one of them solved."""

    tasks: int
    parent_overall: float
    revision_overall: float
    delta: float
    low: float
    high: float
    wins: int
    losses: int

    @property
    def regresses(self) -> bool:
        """The revision does worse than its parent on the paired tasks (any negative difference counts)."""
        return self.delta < 0

    def metrics(self) -> dict[str, float]:
        return {
            "paired_delta": self.delta,
            "paired_low": self.low,
            "paired_high": self.high,
            "parent_overall": self.parent_overall,
            "revision_overall": self.revision_overall,
            "paired_tasks": float(self.tasks),
            "wins": float(self.wins),
            "losses": float(self.losses),
        }


def outcomes(requests: Sequence[RolloutRequested], verdicts: Mapping[str, EpisodeVerified]) -> dict[str, bool]:
    """Task id -> solved, for the requests that have a verdict (the first request of a task when it repeats)."""
    found: dict[str, bool] = {}
    for request in sorted(requests, key=lambda r: (r.task_id, r.episode_id)):
        verdict = verdicts.get(request.episode_id)
        if verdict is not None:
            found.setdefault(request.task_id, verdict.outcome == "success")
    return found


def _overall(pairs: Mapping[str, Sequence[tuple[bool, bool]]]) -> tuple[float, float]:
    """(parent, revision) Overall over per-category pairs; a category without paired tasks counts 0 for both."""
    rates: list[dict[str, float]] = [
        {c: (sum(p[i] for p in pairs[c]) / len(pairs[c]) if pairs.get(c) else 0.0) for c in OVERALL_WEIGHTS}
        for i in (0, 1)
    ]
    return overall_score(rates[0]), overall_score(rates[1])


def compare_paired(
    parent: Mapping[str, bool],
    revision: Mapping[str, bool],
    category: Mapping[str, str],
    seed: str,
    samples: int = BOOTSTRAP_SAMPLES,
) -> PairedResult | None:
    """The paired comparison over the tasks both evaluations ran (None when they share none).

    The interval resamples tasks with replacement within each category (the Overall weights are per category),
    keeping each task's pair together; ``seed`` (e.g. the two versions) makes it reproducible on replay.
    """
    common = sorted(set(parent) & set(revision))
    if not common:
        return None
    pairs: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for task_id in common:
        pairs[category[task_id]].append((parent[task_id], revision[task_id]))
    before, after = _overall(pairs)
    rng = random.Random(int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big"))
    deltas = []
    for _ in range(samples):
        drawn = {c: [ps[rng.randrange(len(ps))] for _ in ps] for c, ps in pairs.items()}
        b, a = _overall(drawn)
        deltas.append(a - b)
    deltas.sort()
    tail = (1 - INTERVAL) / 2
    low, high = deltas[int(tail * (samples - 1))], deltas[int(round((1 - tail) * (samples - 1)))]
    return PairedResult(
        tasks=len(common),
        parent_overall=before,
        revision_overall=after,
        delta=after - before,
        low=low,
        high=high,
        wins=sum(revision[t] and not parent[t] for t in common),
        losses=sum(parent[t] and not revision[t] for t in common),
    )


def revision_decided(
    evaluated: DevSetEvaluated,
    harness_name: str,
    revision_id: str,
    parent_version: str,
    paired: PairedResult | None,
    producer: Producer,
) -> HarnessRevisionDecided:
    """The A/B decision on a published revision: accepted (to ``@production``) when it does not regress."""
    model = f"{evaluated.model_name}/{evaluated.model_version}"
    if paired is None:
        decision, reason = "rejected", f"no paired dev evaluation of the parent {parent_version} with {model}"
    else:
        verdict = "regresses" if paired.regresses else "does not regress"
        decision = "rejected" if paired.regresses else "accepted"
        reason = (
            f"{verdict}: paired dev Overall {paired.revision_overall:.3f} vs {paired.parent_overall:.3f} "
            f"({parent_version}) with {model} on {paired.tasks} tasks, delta {paired.delta:+.3f} "
            f"[{paired.low:+.3f}, {paired.high:+.3f}] ({INTERVAL:.0%} paired bootstrap), "
            f"{paired.wins} won, {paired.losses} lost"
        )
    return HarnessRevisionDecided(
        producer=producer,
        **correlate(evaluated),
        harness_name=harness_name,
        revision_id=revision_id,
        decision=decision,  # type: ignore[arg-type]
        decided_by=AB_DECIDER,
        reason=reason,
        metrics=paired.metrics() if paired is not None else {},
    )
