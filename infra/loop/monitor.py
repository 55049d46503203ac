"""Watches a run from its log alone: per-round counts for the progress bars and the wall time of every stage.

Works the same whether the consumers run in this process or as their own processes: it only tails topics.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from bus_schemas.envelope import Event
from bus_schemas.events import (
    DevSetEvaluated,
    EpisodeEnded,
    EpisodeStarted,
    EpisodeVerified,
    FailureDiagnosed,
    HarnessRevisionDecided,
    HarnessRevisionProposed,
    HarnessRevisionSkipped,
    HarnessVersionPublished,
    ModelVersionRegistered,
    RewardScheduleSelected,
    RolloutRequested,
    RoundCompleted,
    RoundStarted,
    SamplingPlanUpdated,
    TaskGenerationRequested,
    TaskSpecified,
    TrainingRequested,
    TrainingRunCompleted,
    TrajectoryAdmitted,
    TrajectoryQuarantined,
    TrajectoryRejected,
    is_scripted,
    request_of,
    retried_episode,
)
from bus_schemas.topics import TOPICS
from consumers.dev_evaluator.handler import AB_DECIDER, kind_of
from infra.bus.port import Bus
from infra.bus.records import Record
from infra.events import decodable
from infra.outages import OutageWait, is_outage
from infra.report.model import RL_GROUP_PREFIX

STAGES = (
    "reweighting",
    "task construction",
    "rollouts",
    "verification",
    "curation",
    "diagnosis",
    "training",
    "dev evaluation",
    "harness revision",
)


T = TypeVar("T")


@dataclass
class RoundProgress:
    """What the log says about one round so far."""

    round: int
    started: RoundStarted | None = None
    planned: int = 0
    requested: int = 0
    ended: int = 0
    verified: int = 0
    solved: int = 0
    admitted: int = 0
    admitted_self: int = 0  # admitted trajectories the model produced (not a scripted policy)
    rejected: int = 0
    quarantined: int = 0
    diagnosed: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    tasks_requested: int = 0
    tasks_built: int = 0
    training: str = ""  # "", "running", "succeeded", "failed"
    training_error: str | None = None
    model: str | None = None
    train_examples: int | None = None
    train_examples_self: int | None = None  # examples of this round's training set from the model's own episodes
    dev_planned: int = 0
    dev_verified: int = 0
    dev: DevSetEvaluated | None = None
    harness_evals: list[DevSetEvaluated] = field(default_factory=list)
    test: DevSetEvaluated | None = None
    harness: str = ""  # the reviser's answer: "skipped", "proposed", "accepted", "rejected", "published"
    harness_note: str = ""
    completed: RoundCompleted | None = None
    retry_verified: int = 0  # sampled retries of failed rollouts (LoopConfig.failure_retries), not in verified
    retry_solved: int = 0
    rl_episodes: int = 0  # episodes of the round's GRPO groups (not counted in ended/verified/solved)
    rl_solved: int = 0
    rl_steps: int = 0
    care_schedule: str | None = None
    spans: dict[str, list[datetime]] = field(default_factory=dict)

    @property
    def curated(self) -> int:
        return self.admitted + self.rejected + self.quarantined

    def mark(self, stage: str, at: datetime) -> None:
        span = self.spans.setdefault(stage, [at, at])
        span[0], span[1] = min(span[0], at), max(span[1], at)

    def stage_seconds(self) -> dict[str, float]:
        return {s: round((self.spans[s][1] - self.spans[s][0]).total_seconds(), 3) for s in STAGES if s in self.spans}


class RunMonitor:
    """Tails every topic of the run's bus; ``update()`` folds what was appended since the last call."""

    def __init__(self, bus: Bus, run_id: str, outage_retry_s: float = 120.0) -> None:
        self.bus, self.run_id = bus, run_id
        self.outage_retry_s = outage_retry_s
        self.rounds: dict[int, RoundProgress] = {}
        self._cursor: dict[tuple[str, int], int] = {}
        self._episodes: dict[str, tuple[int, bool]] = {}  # episode -> (round, is dev)
        self._verified: set[str] = set()
        self._rl: set[str] = set()  # request episode ids of GRPO groups
        self.events_seen = 0
        self.dead_letters = 0

    def round(self, number: int) -> RoundProgress:
        return self.rounds.setdefault(number, RoundProgress(number))

    def update(self) -> list[Event]:
        fresh: list[Event] = []
        for topic in TOPICS:
            for part, end in sorted(self._waiting(functools.partial(self.bus.end_offsets, topic)).items()):
                start = self._cursor.get((topic, part), 0)
                if start >= end:
                    continue
                records = self._waiting(functools.partial(self._read, topic, part, start))
                if records:
                    self._cursor[(topic, part)] = records[-1].offset + 1
                fresh.extend(e for e in decodable(records) if e.run_id == self.run_id or topic == "dead-letters")
        fresh.sort(key=lambda e: e.occurred_at)
        for event in fresh:
            self._fold(event)
        self.events_seen += len(fresh)
        return fresh

    def _read(self, topic: str, partition: int, start: int) -> list[Record]:
        return list(self.bus.replay(topic, from_offset=start, partition=partition))

    def _waiting(self, read: Callable[[], T]) -> T:
        """``read()``, retried while the broker is unreachable (a restart mid-run), up to ``outage_retry_s``."""
        outage = OutageWait(self.outage_retry_s)
        while True:
            try:
                return read()
            except Exception as exc:
                if not is_outage(exc):
                    raise
                outage.pause(exc, f"the monitor of run {self.run_id}")

    def last_completed(self) -> int | None:
        done = [r.round for r in self.rounds.values() if r.completed is not None]
        return max(done) if done else None

    def _fold(self, e: Event) -> None:  # noqa: C901 - one branch per event type, flat on purpose
        if e.event_type == "DeadLettered":
            self.dead_letters += 1
            return
        if isinstance(e, TaskSpecified) or e.round is None:
            if isinstance(e, TaskSpecified) and e.source.kind == "generated" and self.rounds:
                r = self.round(max(self.rounds))
                r.tasks_built += 1
                r.mark("task construction", e.occurred_at)
            return
        r = self.round(e.round)
        at = e.occurred_at
        if isinstance(e, RoundStarted):
            r.started, r.planned = e, e.planned_rollouts
            r.mark("reweighting", at)
        elif isinstance(e, SamplingPlanUpdated):
            r.mark("reweighting", at)
        elif isinstance(e, TaskGenerationRequested):
            r.tasks_requested += e.count
            r.mark("task construction", at)
        elif isinstance(e, RolloutRequested) and (e.group_id or "").startswith(RL_GROUP_PREFIX):
            self._rl.add(e.episode_id)
            r.mark("training", at)
        elif isinstance(e, EpisodeStarted):  # a member's own start names its group (whatever the rollouts topic shows)
            if (e.group_id or "").startswith(RL_GROUP_PREFIX) and not e.parent_episode_id:  # sub-agents share the group
                self._rl.add(request_of(e.episode_id))
        elif isinstance(e, (EpisodeEnded, EpisodeVerified)) and request_of(e.episode_id or "") in self._rl:
            if isinstance(e, EpisodeVerified) and e.episode_id not in self._verified:
                self._verified.add(e.episode_id)
                r.rl_episodes += 1
                r.rl_solved += e.outcome == "success"
        elif isinstance(e, RewardScheduleSelected):
            r.care_schedule = e.previous
        elif isinstance(e, RolloutRequested):
            dev = kind_of(e.group_id) is not None
            self._episodes[e.episode_id] = (e.round or 0, dev)
            if dev:
                r.dev_planned += 1
                r.mark("dev evaluation", at)
            else:
                r.requested += 1
                r.mark("rollouts", at)
        elif isinstance(e, EpisodeEnded):
            if e.episode_id not in self._episodes:
                return  # a sub-agent's episode: part of its parent's rollout
            _, dev = self._episodes[e.episode_id]
            if not dev:
                r.ended += 1
                r.mark("rollouts", at)
        elif isinstance(e, EpisodeVerified):
            if e.episode_id in self._verified:
                return
            self._verified.add(e.episode_id)
            _, dev = self._episodes.get(e.episode_id, (e.round, False))
            if dev:
                r.dev_verified += 1
            elif retried_episode(e.episode_id) is not None:
                r.retry_verified += 1
                r.retry_solved += e.outcome == "success"
            else:
                r.verified += 1
                r.solved += e.outcome == "success"
                r.mark("verification", at)
        elif isinstance(e, (TrajectoryAdmitted, TrajectoryRejected, TrajectoryQuarantined)):
            if self._episodes.get(e.episode_id or "", (0, False))[1]:
                return  # dev episodes are curated too, but they are not training data
            r.admitted += isinstance(e, TrajectoryAdmitted)
            r.admitted_self += isinstance(e, TrajectoryAdmitted) and not is_scripted(e.provenance.policy_version)
            r.rejected += isinstance(e, TrajectoryRejected)
            r.quarantined += isinstance(e, TrajectoryQuarantined)
            r.mark("curation", at)
        elif isinstance(e, FailureDiagnosed):
            if not self._episodes.get(e.episode_id or "", (0, False))[1]:
                r.diagnosed += 1
                r.failures[e.attribution] = r.failures.get(e.attribution, 0) + 1
                r.mark("diagnosis", at)
        elif isinstance(e, TrainingRequested):
            r.training = "running"
            r.mark("training", at)
        elif isinstance(e, TrainingRunCompleted):
            r.mark("training", at)
            r.rl_steps = int(e.metrics.get("rl_steps", 0))
            if e.status == "failed":
                r.training, r.training_error = "failed", e.error
            if "train_examples" in e.metrics:
                r.train_examples = int(e.metrics["train_examples"])
                r.train_examples_self = int(e.metrics.get("train_examples_self", 0))
        elif isinstance(e, ModelVersionRegistered):
            r.training, r.model = "succeeded", f"{e.model_name}/{e.model_version}"
            r.mark("training", at)
        elif isinstance(e, DevSetEvaluated) and e.split == "test":
            r.test = e
        elif isinstance(e, DevSetEvaluated):
            if e.evaluates == "model":
                r.dev = e
                r.mark("dev evaluation", at)
                r.mark("harness revision", at)
            else:
                r.harness_evals.append(e)
                r.mark("harness revision", at)
        elif isinstance(e, HarnessRevisionSkipped):
            r.harness, r.harness_note = "skipped", e.reason
            r.mark("harness revision", at)
        elif isinstance(e, HarnessRevisionProposed):
            r.harness, r.harness_note = "proposed", e.summary
            r.mark("harness revision", at)
        elif isinstance(e, HarnessRevisionDecided) and e.decided_by == AB_DECIDER:
            r.harness = ab_note(e)
            r.mark("harness revision", at)
        elif isinstance(e, HarnessRevisionDecided):
            r.harness = e.decision
            r.mark("harness revision", at)
        elif isinstance(e, HarnessVersionPublished) and e.revision_id is not None:
            r.harness, r.harness_note = "published", f"{e.harness_version}: {r.harness_note}"
            r.mark("harness revision", at)
        elif isinstance(e, RoundCompleted):
            r.completed = e


def ab_note(decided: HarnessRevisionDecided) -> str:
    """The paired A/B of a revision in a few words: promoted or not, the paired delta and its interval."""
    verdict = "promoted" if decided.decision == "accepted" else "not promoted"
    m = decided.metrics
    if "paired_delta" not in m:
        return f"{verdict} (no paired dev evaluation)"
    return (
        f"{verdict} (paired delta {m['paired_delta']:+.3f} [{m['paired_low']:+.3f}, {m['paired_high']:+.3f}] "
        f"on {m['paired_tasks']:.0f} dev tasks)"
    )


def summary_line(r: RoundProgress) -> str:
    """One line per finished round, as printed by ``flywheel run``."""
    solved = f"{r.solved}/{r.verified} solved" if r.verified else "no rollouts"
    if r.retry_verified:
        solved += f", retries {r.retry_solved}/{r.retry_verified} solved"
    curation = f"admitted {r.admitted} (self {r.admitted_self}) rejected {r.rejected} quarantined {r.quarantined}"
    if r.training == "succeeded":
        training = f"trained {r.model}"
        if r.rl_steps:
            training += (
                f" with {r.rl_steps} GRPO steps ({r.rl_solved}/{r.rl_episodes} RL episodes solved, "
                f"CARE {r.care_schedule})"
            )
        if r.train_examples is not None:
            training += f" on {r.train_examples} examples (self {r.train_examples_self})"
    elif r.training == "failed":
        training = f"training failed ({(r.training_error or '')[:60]})"
    else:
        training = "no training"
    if r.dev is not None:
        cats = " ".join(f"{c} {s.success_rate:.2f}" for c, s in r.dev.per_category.items())
        dev = f"dev Overall {r.dev.overall:.3f} ({cats})"
        if r.dev.external:
            dev += ", external " + " ".join(f"{n} {s.success_rate:.2f}/{s.tasks}" for n, s in r.dev.external.items())
    else:
        dev = "no dev evaluation"
    harness = r.harness or "no revision"
    if r.harness_evals:
        harness += f", revision dev Overall {r.harness_evals[-1].overall:.3f}"
    wall = f"{r.completed.wall_time_s:.0f}s" if r.completed else "?"
    line = f"round {r.round}: {solved} | {curation} | {training} | {dev} | harness {harness} | {wall}"
    if r.test is not None:
        cats = " ".join(f"{c} {s.success_rate:.2f}" for c, s in r.test.per_category.items())
        line += f" | test Overall {r.test.overall:.3f} ({cats}) of {r.test.model_name}/{r.test.model_version}"
    return line


def stage_seconds(rounds: Iterable[RoundProgress]) -> dict[int, dict[str, float]]:
    return {r.round: r.stage_seconds() for r in rounds}
