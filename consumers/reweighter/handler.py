"""Pure planning for round ``r`` from everything judged before it: weights, repair sets, task requests.

Mastered tasks are down-weighted except a fixed preservation slice (so old skills keep being rehearsed),
unstable tasks are up-weighted by their variance, diagnosed failures form repair sets (task and tag
boosts), tasks already demonstrated (reference episodes the model was trained on) are down-weighted so the
model's rollouts go to tasks new to it, and a capability whose dev score is low while few of its train tasks
are new to the model gets new tasks requested: harder variants of its mastered tasks when it has some, new
worlds of its templates otherwise. Every capability scored on dev is planned for, in the pool or not.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from bus_schemas.envelope import Event, Producer, correlate
from bus_schemas.events import (
    OVERALL_WEIGHTS,
    CapabilityTag,
    DevSetEvaluated,
    EpisodeVerified,
    FailureDiagnosed,
    RoundStarted,
    SamplingPlanUpdated,
    TaskGenerationRequested,
    TaskSpecified,
)
from consumers.reweighter.competence import competence_by_task

VERSION = "0.1.0"
LABEL_TO_TAG: dict[str, CapabilityTag] = {
    "tool_routing": "tool_routing",
    "argument_grounding": "argument_grounding",
    "state_tracking": "state_tracking",
    "recovery": "recovery",
    "premature_termination": "verified_completion",
    "hallucinated_completion": "verified_completion",
}


@dataclass(frozen=True)
class PlanConfig:
    """Knobs of the plan; defaults suit the sandbox suite."""

    mastered_at: float = 0.9  # success rate over >= min_attempts that counts as mastered
    min_attempts: int = 3
    mastered_weight: float = 0.2
    preserve_one_in: int = 5  # every 5th mastered task (by id hash) keeps full weight
    repair_boost: float = 1.5
    low_dev_score: float = 0.5
    min_pool: int = 200  # train tasks per capability new to the model below which new ones are requested
    max_request: int = 50
    demonstrated_weight: float = 0.1  # a task with a reference episode in the training data: little left to learn


def preserved(task_id: str, one_in: int) -> bool:
    return int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16) % one_in == 0


def round_dev(devs: Sequence[DevSetEvaluated], started: RoundStarted) -> DevSetEvaluated | None:
    """The dev score a round's plan acts on: the latest evaluation of what the round runs (its policy under its
    harness), else the latest evaluation of a model. A harness revision's candidate evaluation scores a harness the
    round does not run unless it was promoted (then it is the round's harness); taking the latest dev score of any
    kind once planned round 2 on a rejected revision's 0.000, as if the model solved nothing."""
    scored = [d for d in devs if d.split == "dev"]
    runs = (started.policy_version, started.harness_version)
    ran = [d for d in scored if (f"{d.model_name}/{d.model_version}", d.harness_version) == runs]
    chosen = ran or [d for d in scored if d.model_dev_score]
    return max(chosen, key=lambda d: (d.occurred_at, d.event_id)) if chosen else None


def plan(
    started: RoundStarted,
    tasks: list[TaskSpecified],
    verdicts: list[EpisodeVerified],
    diagnoses: list[FailureDiagnosed],
    dev: DevSetEvaluated | None,
    producer: Producer,
    cfg: PlanConfig = PlanConfig(),
    demonstrated: frozenset[str] | set[str] = frozenset(),
) -> list[Event]:
    """``verdicts``/``diagnoses``: the model's (scripted rounds excluded); ``demonstrated``: train tasks a scripted
    policy (the cold start) solved, i.e. tasks whose solution is already in the training data."""
    train = sorted((t for t in tasks if t.split == "train"), key=lambda t: t.task_id)
    comp = competence_by_task(verdicts)
    repair = Counter(d.task_id for d in diagnoses)
    weights: dict[str, float] = {}
    for task in train:
        c = comp.get(task.task_id)
        w = 1.0
        if c and c.attempts >= cfg.min_attempts and c.success_rate >= cfg.mastered_at:
            w = 1.0 if preserved(task.task_id, cfg.preserve_one_in) else cfg.mastered_weight
        elif c:
            w = 1.0 + 4.0 * c.variance
        elif task.task_id in demonstrated:
            w = cfg.demonstrated_weight
        if repair[task.task_id]:
            w *= cfg.repair_boost
        if round(w, 6) != 1.0:
            weights[task.task_id] = round(w, 6)  # sparse: absent = 1.0, so the plan stays small with many tasks
    categories = sorted({t.category for t in train})
    cat_rate = {
        cat: [comp[t.task_id].success_rate for t in train if t.category == cat and t.task_id in comp]
        for cat in categories
    }
    category_weights = {cat: round(1.5 - (sum(r) / len(r) if r else 0.5), 6) for cat, r in cat_rate.items()}
    labels = Counter(LABEL_TO_TAG[d.attribution] for d in diagnoses if d.attribution in LABEL_TO_TAG)
    total = sum(labels.values())
    tag_weights = {tag: round(1.0 + n / total, 6) for tag, n in sorted(labels.items())} if total else {}
    plan_id = f"{started.run_id}/round-{started.round}"
    out: list[Event] = [
        SamplingPlanUpdated(
            producer=producer,
            **correlate(started),
            plan_id=plan_id,
            category_weights=category_weights,
            tag_weights=tag_weights,
            task_weights=weights,
            reweighter_version=VERSION,
            rationale=f"{len(comp)} tasks attempted, {sum(1 for t, w in weights.items() if w < 1 and t in comp)} "
            "down-weighted as "
            f"mastered, {sum(1 for t in weights if t in demonstrated and t not in comp)} as demonstrated, "
            f"{len(repair)} in repair sets, from {len(verdicts)} verdicts before round {started.round}",
        )
    ]
    per_category = dev.per_category if dev else {}
    for cat in sorted(set(categories) | set(OVERALL_WEIGHTS)) if dev else []:
        score = per_category.get(cat)
        pool = sum(1 for t in train if t.category == cat and t.task_id not in comp and t.task_id not in demonstrated)
        if score is not None and score.success_rate < cfg.low_dev_score and pool < cfg.min_pool:
            mastered = sorted(
                t.task_id
                for t in train
                if t.category == cat and t.task_id in comp and comp[t.task_id].success_rate >= cfg.mastered_at
            )
            out.append(
                TaskGenerationRequested(
                    producer=producer,
                    **correlate(started),
                    request_id=f"{plan_id}/{cat}",
                    capability=cat,
                    count=min(cfg.max_request, cfg.min_pool - pool),
                    seed_task_ids=mastered[:5],
                    rationale=f"dev success {score.success_rate:.2f} < {cfg.low_dev_score} with {pool} train tasks "
                    "new to the model"
                    + (f"; harder variants of {len(mastered)} mastered tasks" if mastered else "; new worlds"),
                )
            )
    return out
