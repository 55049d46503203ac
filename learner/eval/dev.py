"""Runs dev tasks with a policy through the harness, verifies each, and summarises them as DevSetEvaluated."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import zip_longest

from bus_schemas.envelope import Event
from bus_schemas.events.tasks import Capability, Split, TaskSpecified
from bus_schemas.events.training import OVERALL_WEIGHTS, DevSetEvaluated, category_scores, overall_score
from harness_service.config import HarnessConfig
from harness_service.policy.base import Policy
from harness_service.ports import BlobSink
from harness_service.runner.episode import Harness, RunIds
from harness_service.skills.library import SkillLibrary
from learner.episodes import PRODUCER, JudgedEpisode, run_judged_episode
from producers.backends import plugins

EventsSink = Callable[[Sequence[Event]], object]


@dataclass(frozen=True)
class DevReport:
    """The published summary and every judged episode behind it."""

    evaluated: DevSetEvaluated
    episodes: list[JudgedEpisode]

    @property
    def success_rate(self) -> float:
        return sum(e.verdict.outcome == "success" for e in self.episodes) / max(1, len(self.episodes))


def pick_tasks(
    tasks: Sequence[TaskSpecified],
    *,
    split: Split = "dev",
    per_category: int | None = None,
    categories: Sequence[Capability] = tuple(OVERALL_WEIGHTS),
    max_difficulty: int = 3,
) -> list[TaskSpecified]:
    """A deterministic slice of a split: ``per_category`` tasks of each category, spread over its templates.

    The slice takes each template's first instance (in suite order), then each one's second, and so on, so every
    template of a category (and so every difficulty) is scored once the slice holds as many tasks as it has
    templates. Taking a category's first tasks in suite order instead scored the instances of its first templates
    only: 16 per category were the 4 instances of 4 templates of difficulty 1-2, the other 16 templates never."""
    chosen: list[TaskSpecified] = []
    for category in categories:
        by_template: dict[str, list[TaskSpecified]] = defaultdict(list)
        for t in tasks:
            if t.split == split and t.category == category and t.difficulty <= max_difficulty:
                by_template[t.source.template_id or t.task_id].append(t)
        spread = [t for rank in zip_longest(*by_template.values()) for t in rank if t is not None]
        chosen.extend(spread if per_category is None else spread[:per_category])
    return chosen


def evaluate_dev(
    policy: Policy,
    tasks: Sequence[TaskSpecified],
    *,
    config: HarnessConfig,
    skills: SkillLibrary,
    blobs: BlobSink,
    publish: EventsSink,
    run_id: str,
    model_name: str,
    model_version: str,
    round: int | None = None,
    on_task: Callable[[], None] | None = None,
) -> DevReport:
    """Every task once (greedy policy, task seed); episodes and verdicts go to ``publish`` as they finish."""
    backends = plugins.Backends()  # one per backend the tasks name, made through the plugin registry
    harness = Harness(config=config, policy=policy, blobs=blobs, events=lambda e: None, skills=skills)
    judged: list[JudgedEpisode] = []
    for task in tasks:
        backend = backends[task.backend]
        episode = run_judged_episode(harness, task, backend, RunIds(run_id=run_id, round=round, cause=task.event_id))
        publish(episode.events)
        judged.append(episode)
        if on_task is not None:
            on_task()
    evaluated = summarise(judged, tasks, model_name, model_version, harness.version, run_id, round)
    publish([evaluated])
    return DevReport(evaluated, judged)


def summarise(
    judged: Sequence[JudgedEpisode],
    tasks: Sequence[TaskSpecified],
    model_name: str,
    model_version: str,
    harness_version: str,
    run_id: str,
    round: int | None,
) -> DevSetEvaluated:
    """Per-category success (a category with no task scores 0 over 0 tasks) and the per-task averages."""
    wins: dict[str, list[bool]] = defaultdict(list)
    for task, episode in zip(tasks, judged, strict=True):
        wins[task.category].append(episode.verdict.outcome == "success")
    per_category = category_scores(wins)
    n = max(1, len(judged))
    costs = [e.outcome.cost_usd for e in judged]
    known = all(c is not None for c in costs) and bool(costs)
    return DevSetEvaluated(
        producer=PRODUCER,
        run_id=run_id,
        round=round,
        model_name=model_name,
        model_version=model_version,
        harness_version=harness_version,
        per_category=per_category,
        overall=overall_score({k: v.success_rate for k, v in per_category.items()}),
        tokens_per_task=sum(e.outcome.input_tokens + e.outcome.output_tokens for e in judged) / n,
        tool_calls_per_task=sum(e.outcome.tool_calls for e in judged) / n,
        cost_per_1k_tasks_usd=1000 * sum(c or 0.0 for c in costs) / n if known else None,
    )
