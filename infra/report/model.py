"""Derive a run's per-round figures from its events alone, so a replayed log gives the same report."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Event
from bus_schemas.events import (
    DevSetEvaluated,
    EpisodeEnded,
    EpisodeStarted,
    EpisodeVerified,
    FailureDiagnosed,
    HarnessRevisionDecided,
    HarnessRevisionProposed,
    HarnessVersionPublished,
    ModelVersionRegistered,
    RewardScheduleSelected,
    RolloutRequested,
    RoundCompleted,
    TaskSpecified,
    TrainingRunCompleted,
    TrajectoryAdmitted,
    TrajectoryQuarantined,
    TrajectoryRejected,
    is_scripted,
    request_of,
    retried_episode,
)
from consumers.dev_evaluator.handler import AB_DECIDER, compare_paired, kind_of, model_ref, outcomes
from infra.config import mask_credentials

CATEGORIES = ("tool_use", "memory", "skills", "sub_agent")
RL_GROUP_PREFIX = "grpo:"
"""Group ids of the learner's GRPO requests (learner.rl.loop.GROUP_PREFIX)."""


@dataclass
class RoundRow:
    round: int
    dev_overall: float | None = None
    dev_per_category: dict[str, float] = field(default_factory=dict)
    dev_external: dict[str, float] = field(default_factory=dict)
    """Success on external suites' dev tasks by suite backend (``LoopConfig.external_suites``); not in Overall."""
    dev_model_version: str | None = None
    dev_harness_version: str | None = None
    dev_vs_previous: dict[str, Any] | None = None
    """This round's model against the previous round's on the dev tasks both ran (same instances and seeds): the
    paired Overall ``delta`` with its bootstrap ``interval``, tasks ``won`` / ``lost`` and the ``versus`` model.
    Whether dev rose is read here: a delta whose interval spans 0 is within the noise of the dev split."""
    dev_per_template: dict[str, dict[str, int]] = field(default_factory=dict)
    """Template id -> ``difficulty``, ``tasks`` and ``solved`` of this round's model evaluation on dev: which
    templates the round's model solves (the dev slice spreads over every template of each category)."""
    dev_tokens_per_task: float | None = None
    dev_tool_calls_per_task: float | None = None
    revision_dev_overall: float | None = None
    revision_harness_version: str | None = None
    episodes: int = 0
    solved: int = 0
    tokens_per_solved: float | None = None
    tool_calls_per_solved: float | None = None
    admitted: int = 0
    admitted_self: int = 0
    """Admitted trajectories the model produced (a scripted policy such as the reference solver excluded)."""
    admitted_self_templates: dict[str, int] = field(default_factory=dict)
    """Template id -> ``admitted_self`` trajectories of that template (a generated task under the template it was
    made from): what the round learned from itself, to read beside ``dev_per_template`` (a template the model solves
    on train instances but not on dev is evidence that does not transfer yet)."""
    train_examples: int | None = None
    train_examples_self: int | None = None
    """Examples of this round's training set from the model's own episodes (before value-swap copies)."""
    test_overall: float | None = None
    """The test split, evaluated once at the end of the run with the best model by dev (the unbiased figure)."""
    test_per_category: dict[str, float] = field(default_factory=dict)
    test_model_version: str | None = None
    rejected: int = 0
    quarantined: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    models_registered: list[dict[str, str]] = field(default_factory=list)
    harness_published: list[dict[str, str]] = field(default_factory=list)
    rl_steps: int = 0
    """GRPO updates of this round's training run (0: SFT only)."""
    rl_episodes: int = 0
    """Episodes of the round's RL groups (sampled; not in ``episodes``, which are the round's planned rollouts)."""
    rl_solved: int = 0
    retry_episodes: int = 0
    """Sampled retries of the train rollouts the round's model failed (``LoopConfig.failure_retries``); not in
    ``episodes``. ``retry_solved`` of them succeeded: tasks the model's greedy decoding did not solve."""
    retry_solved: int = 0
    care_schedule: str | None = None
    """The CARE reward schedule of this round's RL; ``care_schedule_next`` is the controller's choice after it."""
    care_schedule_next: str | None = None
    wall_time_s: float | None = None
    stage_seconds: dict[str, float] = field(default_factory=dict)
    revisions: list[dict[str, Any]] = field(default_factory=list)
    """The round's harness revisions (:func:`revision_rows`): patch kinds, diagnosis basis, the paired dev A/B
    against the parent version and whether it went to ``@production``."""


PatchReader = Callable[[BlobRef], bytes]
"""Reads a proposal's patch blob (the blob store's ``get``)."""


def _patch(read: PatchReader | None, ref: BlobRef) -> Any:
    """The patch as its JSON object (the change to the parent config), or None when it cannot be read."""
    if read is None:
        return None
    try:
        return orjson.loads(read(ref))
    except Exception:  # a missing or unreadable blob leaves the row without its patch; the report still renders
        return None


def revision_rows(events: Iterable[Event], read_patch: PatchReader | None = None) -> dict[int, list[dict[str, Any]]]:
    """Round -> one row per proposed revision: ``revision_id``, ``patch_kinds``, ``basis`` (diagnosis label ->
    count), ``dev_parent`` / ``dev_revision`` (Overall of each on the paired dev tasks), ``paired_delta`` with its
    ``paired_interval`` and ``paired_tasks``, tasks ``won`` / ``lost``, ``promoted`` (the A/B accepted it),
    ``decision`` (the A/B's or the review gate's reason), ``summary`` (the reviser's, with examples) and ``patch``
    (the change itself, read with ``read_patch``; None without it).
    A revision not (yet) decided by the A/B has None figures and ``promoted`` false."""
    labels: dict[str, str] = {}
    proposals: list[HarnessRevisionProposed] = []
    decisions: dict[str, HarnessRevisionDecided] = {}
    gate: dict[str, HarnessRevisionDecided] = {}
    for event in events:
        if isinstance(event, FailureDiagnosed):
            labels[event.event_id] = event.attribution
        elif isinstance(event, HarnessRevisionProposed):
            proposals.append(event)
        elif isinstance(event, HarnessRevisionDecided):
            (decisions if event.decided_by == AB_DECIDER else gate)[event.revision_id] = event
    rows: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for p in proposals:
        ab, gated = decisions.get(p.revision_id), gate.get(p.revision_id)
        metrics = ab.metrics if ab is not None else {}
        rows[p.round if p.round is not None else -1].append(
            {
                "revision_id": p.revision_id,
                "base_version": p.base_version,
                "patch_kinds": list(p.patch_kinds),
                "basis": dict(sorted(Counter(labels.get(e, "unknown") for e in p.motivated_by).items())),
                "dev_parent": metrics.get("parent_overall"),
                "dev_revision": metrics.get("revision_overall"),
                "paired_delta": metrics.get("paired_delta"),
                "paired_interval": [metrics["paired_low"], metrics["paired_high"]] if "paired_low" in metrics else None,
                "paired_tasks": int(metrics["paired_tasks"]) if "paired_tasks" in metrics else None,
                "won": int(metrics["wins"]) if "wins" in metrics else None,
                "lost": int(metrics["losses"]) if "losses" in metrics else None,
                "promoted": ab is not None and ab.decision == "accepted",
                "decision": ab.reason if ab is not None else (f"review: {gated.decision}" if gated else "pending"),
                "summary": p.summary,
                "patch": _patch(read_patch, p.patch),
            }
        )
    return rows


DevOutcomes = dict[int, tuple[str, dict[str, bool]]]
"""Round -> (its evaluated model, dev task id -> solved) from that model evaluation's own episodes."""


def _dev_outcomes(
    events: list[Event], rows: dict[int, RoundRow], verified: dict[str, EpisodeVerified]
) -> tuple[dict[str, TaskSpecified], DevOutcomes]:
    """The run's tasks and each round's model evaluation on the dev split's tasks of the Overall (external suites
    excluded), from the evaluation's own episodes."""
    tasks = {e.task_id: e for e in events if isinstance(e, TaskSpecified)}
    requests: dict[tuple[int, str], list[RolloutRequested]] = defaultdict(list)
    for event in events:
        if isinstance(event, RolloutRequested) and event.round is not None and kind_of(event.group_id) == "model":
            task = tasks.get(event.task_id)
            if task is not None and task.split == "dev" and task.source.kind != "external":
                requests[(event.round, event.policy_version)].append(event)
    solved: DevOutcomes = {}
    for number, r in rows.items():
        for (at, policy), asked in requests.items():
            name, version = model_ref(policy)
            if at == number and r.dev_model_version == f"{name}/{version}":
                solved[number] = (r.dev_model_version, outcomes(asked, verified))
    return tasks, solved


def _round_over_round(run_id: str, tasks: dict[str, TaskSpecified], solved: DevOutcomes) -> dict[int, dict[str, Any]]:
    """Round -> its model's paired dev comparison with the previous round's model (``RoundRow.dev_vs_previous``)."""
    compared: dict[int, dict[str, Any]] = {}
    for number in sorted(solved):
        if number - 1 not in solved:
            continue
        (before_model, before), (model, after) = solved[number - 1], solved[number]
        category = {t: tasks[t].category for t in set(before) | set(after)}
        paired = compare_paired(before, after, category, seed=f"{run_id}|{before_model}|{model}")
        if paired is not None:
            compared[number] = {
                "versus": before_model,
                "delta": paired.delta,
                "interval": [paired.low, paired.high],
                "won": paired.wins,
                "lost": paired.losses,
                "tasks": paired.tasks,
            }
    return compared


def _per_template(tasks: dict[str, TaskSpecified], solved: DevOutcomes) -> dict[int, dict[str, dict[str, int]]]:
    """Round -> template id -> ``difficulty``, ``tasks`` and ``solved`` of the round's model on dev."""
    folded: dict[int, dict[str, dict[str, int]]] = {}
    for number, (_, outcome) in solved.items():
        cells: dict[str, dict[str, int]] = {}
        for task_id, won in outcome.items():
            task = tasks[task_id]
            cell = cells.setdefault(
                task.source.template_id or task_id, {"difficulty": task.difficulty, "tasks": 0, "solved": 0}
            )
            cell["tasks"] += 1
            cell["solved"] += won
        folded[number] = dict(sorted(cells.items()))
    return folded


@dataclass
class RunReport:
    run_id: str
    rounds: list[RoundRow]
    settings: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"run_id": self.run_id, "settings": self.shown_settings(), "rounds": [asdict(r) for r in self.rounds]}

    def shown_settings(self) -> dict[str, str]:
        """The settings as a report shows them: credentials in URLs masked."""
        return {k: mask_credentials(str(v)) for k, v in self.settings.items()}


def build_report(
    run_id: str,
    events: Iterable[Event],
    stage_seconds: dict[int, dict[str, float]] | None = None,
    read_patch: PatchReader | None = None,
) -> RunReport:
    """Fold the run's events into one row per round (events without a round are ignored); ``read_patch`` adds each
    revision's patch from the blob store."""
    events = [e for e in events if e.run_id == run_id]
    rows: dict[int, RoundRow] = {}
    ended: dict[str, EpisodeEnded] = {}
    verified: dict[str, EpisodeVerified] = {}
    failures: dict[int, Counter[str]] = defaultdict(Counter)
    own_templates: dict[int, Counter[str]] = defaultdict(Counter)
    dev_episodes: set[str] = set()
    rl_requests: set[str] = set()

    def row(number: int) -> RoundRow:
        return rows.setdefault(number, RoundRow(round=number))

    for event in events:
        if event.run_id != run_id or event.round is None:
            continue
        r = row(event.round)
        if isinstance(event, TrainingRunCompleted) and "rl_steps" in event.metrics:
            r.rl_steps = int(event.metrics["rl_steps"])
        if isinstance(event, RewardScheduleSelected):
            r.care_schedule, r.care_schedule_next = event.previous, event.schedule
        if isinstance(event, RolloutRequested) and (event.group_id or "").startswith(RL_GROUP_PREFIX):
            rl_requests.add(event.episode_id)
        if (
            isinstance(event, EpisodeStarted)
            and (event.group_id or "").startswith(RL_GROUP_PREFIX)
            and not event.parent_episode_id
        ):
            rl_requests.add(request_of(event.episode_id))
        if isinstance(event, DevSetEvaluated) and event.split == "test":
            r.test_overall = event.overall
            r.test_per_category = {c: s.success_rate for c, s in event.per_category.items()}
            r.test_model_version = f"{event.model_name}/{event.model_version}"
        elif isinstance(event, DevSetEvaluated) and event.evaluates == "harness":
            r.revision_dev_overall, r.revision_harness_version = event.overall, event.harness_version
        elif isinstance(event, DevSetEvaluated):
            r.dev_overall = event.overall
            r.dev_per_category = {c: s.success_rate for c, s in event.per_category.items()}
            r.dev_external = {name: s.success_rate for name, s in event.external.items()}
            r.dev_model_version = f"{event.model_name}/{event.model_version}"
            r.dev_harness_version = event.harness_version
            r.dev_tokens_per_task, r.dev_tool_calls_per_task = event.tokens_per_task, event.tool_calls_per_task
        elif isinstance(event, RolloutRequested) and kind_of(event.group_id) is not None:
            dev_episodes.add(event.episode_id)
        elif isinstance(event, EpisodeEnded):
            ended[event.episode_id] = event
        elif isinstance(event, EpisodeVerified):
            verified[event.episode_id] = event
        elif event.episode_id in dev_episodes and isinstance(
            event, (TrajectoryAdmitted, TrajectoryRejected, TrajectoryQuarantined, FailureDiagnosed)
        ):
            continue  # dev episodes are judged and curated too, but they are not training data
        elif isinstance(event, TrajectoryAdmitted):
            r.admitted += 1
            if not is_scripted(event.provenance.policy_version):
                r.admitted_self += 1
                own_templates[event.round][event.provenance.task_source.template_id or event.task_id] += 1
        elif isinstance(event, TrajectoryRejected):
            r.rejected += 1
        elif isinstance(event, TrajectoryQuarantined):
            r.quarantined += 1
        elif isinstance(event, FailureDiagnosed):
            failures[event.round][event.attribution] += 1
        elif isinstance(event, TrainingRunCompleted) and "train_examples" in event.metrics:
            r.train_examples = int(event.metrics["train_examples"])
            r.train_examples_self = int(event.metrics.get("train_examples_self", 0))
        elif isinstance(event, ModelVersionRegistered):
            r.models_registered.append(
                {
                    "model": f"{event.model_name}/{event.model_version}",
                    "mlflow": event.registry_uri or f"models:/{event.model_name}/{event.model_version}",
                    "training_run_id": event.training_run_id or "",
                    "parent": event.parent_version or "",
                }
            )
        elif isinstance(event, HarnessVersionPublished):
            r.harness_published.append(
                {
                    "harness": event.harness_version,
                    "mlflow": f"models:/{event.harness_version}",
                    "revision_id": event.revision_id or "",
                }
            )
        elif isinstance(event, RoundCompleted):
            r.wall_time_s = event.wall_time_s

    by_round: dict[int, list[tuple[EpisodeEnded, EpisodeVerified | None]]] = defaultdict(list)
    for episode_id, end in ended.items():
        if end.round is not None and request_of(episode_id) in rl_requests:
            verdict = verified.get(episode_id)
            row(end.round).rl_episodes += 1
            row(end.round).rl_solved += verdict is not None and verdict.outcome == "success"
        elif end.round is not None and retried_episode(episode_id) is not None and episode_id in verified:
            row(end.round).retry_episodes += 1
            row(end.round).retry_solved += verified[episode_id].outcome == "success"
        elif (
            end.round is not None and episode_id not in dev_episodes and episode_id in verified
        ):  # sub-agents: no verdict
            by_round[end.round].append((end, verified.get(episode_id)))
    for number, pairs in by_round.items():
        r = row(number)
        solved = [end for end, verdict in pairs if verdict is not None and verdict.outcome == "success"]
        r.episodes, r.solved = len(pairs), len(solved)
        if solved:
            r.tokens_per_solved = sum(e.input_tokens + e.output_tokens + e.thinking_tokens for e in solved) / len(
                solved
            )
            r.tool_calls_per_solved = sum(e.tool_calls for e in solved) / len(solved)
    tasks, dev_solved = _dev_outcomes(events, rows, verified)
    for number, paired in _round_over_round(run_id, tasks, dev_solved).items():
        row(number).dev_vs_previous = paired
    for number, templates in _per_template(tasks, dev_solved).items():
        row(number).dev_per_template = templates
    for number, counts in failures.items():
        row(number).failures = dict(sorted(counts.items()))
    for number, counts in own_templates.items():
        row(number).admitted_self_templates = dict(sorted(counts.items()))
    for number, stages in (stage_seconds or {}).items():
        row(number).stage_seconds = dict(stages)
    for number, revisions in revision_rows(events, read_patch).items():
        if number >= 0:
            row(number).revisions = revisions
    return RunReport(run_id=run_id, rounds=[rows[k] for k in sorted(rows)])
