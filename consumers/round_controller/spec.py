"""Wiring: reads the run's rounds, tasks, verdicts, curation and model events from the log; decisions in handler.

"Fire once" steps (training trigger, round completion) check the log for their own earlier output and
remember what this process already emitted, so redelivery and same-batch repeats publish nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import (
    DevSetEvaluated,
    EpisodeVerified,
    HarnessRevisionDecided,
    HarnessRevisionProposed,
    HarnessRevisionSkipped,
    HarnessVersionPublished,
    ModelVersionRegistered,
    RoundCompleted,
    RoundStarted,
    SamplingPlanUpdated,
    TaskSpecified,
    TrainingRequested,
    TrainingRunCompleted,
    TrajectoryAdmitted,
    TrajectoryQuarantined,
    TrajectoryRejected,
    before_round,
    retried_episode,
    retry_episode_id,
)
from bus_schemas.topics import (
    TOPIC_CURATION,
    TOPIC_HARNESS,
    TOPIC_MODELS,
    TOPIC_ROUNDS,
    TOPIC_SAMPLING,
    TOPIC_TASKS,
    TOPIC_VERDICTS,
)
from consumers.common.log_index import LogIndex
from consumers.common.sources import MissingInput
from consumers.round_controller.handler import (
    VERSION,
    RoundConfig,
    after_curation,
    awaited_retries,
    best_versions,
    complete,
    dev_slice,
    evaluate,
    harness_settled,
    next_round,
    retries,
    schedule,
)
from infra.bootstrap import Ports
from infra.runtime import ConsumerSpec

NAME = "round_controller"
PRODUCER = Producer(service=NAME, version=VERSION)
DECISIONS = (TrajectoryAdmitted, TrajectoryRejected, TrajectoryQuarantined)
HARNESS_ANSWERS = (HarnessRevisionSkipped, HarnessRevisionProposed, HarnessRevisionDecided, HarnessVersionPublished)


@dataclass
class _View:
    """One run's events of ``kind`` on one topic, in log order and grouped (tasks by split, the rest by round),
    extended with only what the topic's index appended since the last look: a read costs the new events, not the
    run's history (a run of thousands of rounds read its whole history for every event)."""

    kind: type | tuple[type, ...]
    seen: int = 0
    events: list[Any] = field(default_factory=list)
    groups: dict[object, list[Any]] = field(default_factory=dict)
    task_ids: dict[object, set[str]] = field(default_factory=dict)
    """Per group, the ids of its tasks (task views only)."""

    def extend(self, log: list[Event]) -> _View:
        if len(log) < self.seen:  # the index was rebuilt: start over
            self.seen, self.events, self.groups, self.task_ids = 0, [], {}, {}
        for event in log[self.seen :]:
            if isinstance(event, self.kind):
                self.events.append(event)
                group = event.split if isinstance(event, TaskSpecified) else event.round
                self.groups.setdefault(group, []).append(event)
                if isinstance(event, TaskSpecified):
                    self.task_ids.setdefault(group, set()).add(event.task_id)
        self.seen = len(log)
        return self


class RoundController:
    def __init__(self, config: RoundConfig | None = None) -> None:
        self.config = config or RoundConfig()
        self.ports: Ports | None = None
        self._fired: set[tuple[str, int | str]] = set()
        self._views: dict[tuple[str, str, object], _View] = {}
        self._caught_up: set[str] = set()
        """Topics read up to their end while handling the current event (once each: on Kafka a look at the end
        offsets is a request)."""

    @cached_property
    def logs(self) -> dict[str, LogIndex]:
        assert self.ports is not None
        topics = (TOPIC_ROUNDS, TOPIC_TASKS, TOPIC_VERDICTS, TOPIC_CURATION, TOPIC_MODELS, TOPIC_HARNESS)
        return {t: LogIndex(self.ports.bus, t, lambda e: e.run_id) for t in topics}

    def _view(self, topic: str, run_id: str, kind: type | tuple[type, ...]) -> _View:
        if topic not in self._caught_up:
            self.logs[topic].catch_up()
            self._caught_up.add(topic)
        view = self._views.setdefault((topic, run_id, kind), _View(kind))
        return view.extend(self.logs[topic].get(run_id))

    def _read(self, topic: str, run_id: str, kind: type | tuple[type, ...]) -> list:
        """The run's ``kind`` events on ``topic`` in log order (shared: callers do not modify it)."""
        return self._view(topic, run_id, kind).events

    def _started(self, run_id: str, round_: int | None) -> RoundStarted:
        found = self._view(TOPIC_ROUNDS, run_id, RoundStarted).groups.get(round_)
        if not found:
            raise MissingInput(f"no RoundStarted for run {run_id!r} round {round_}")
        return found[0]

    def _tasks(self, run_id: str, split: str) -> list[TaskSpecified]:
        return self._view(TOPIC_TASKS, run_id, TaskSpecified).groups.get(split, [])

    def _done(self, run_id: str, round_: int) -> bool:
        """Was this round closed already (on the log or by this process)?"""
        return ("complete", round_) in self._fired or round_ in self._view(TOPIC_ROUNDS, run_id, RoundCompleted).groups

    def handle(self, event: Event, ports: Ports) -> list[Event]:
        self.ports = ports
        self._caught_up.clear()
        run, r = event.run_id, event.round
        if isinstance(event, RoundCompleted):
            return list(
                next_round(
                    event, self._started(run, r), self.config, PRODUCER, self._evaluations(run), self._decisions(run)
                )
            )
        if r is None or isinstance(event, RoundStarted):
            return []
        started = self._started(run, r)
        if isinstance(event, SamplingPlanUpdated):
            # The pool the plan was made over: tasks generated for this round's own requests (the reweighter asks
            # for them with the plan) arrive while the draw is made, and drawing from whichever had arrived made a
            # seeded run's draws differ from run to run. They join the next round's pool.
            train = [t for t in self._tasks(run, "train") if before_round(t.round, r)]
            return list(schedule(event, started, train, PRODUCER, self.config.rollout_temperature, self.config.seed))
        if isinstance(event, ModelVersionRegistered):
            policy = f"{event.model_name}/{event.model_version}"
            return list(evaluate(event, started, self._dev(run), policy, started.harness_version, PRODUCER, "model"))
        if isinstance(event, HarnessVersionPublished) and event.revision_id is not None:
            policy = self._paired_policy(event, started)
            return list(evaluate(event, started, self._dev(run), policy, event.harness_version, PRODUCER, "harness"))
        if isinstance(event, (DevSetEvaluated, *HARNESS_ANSWERS)):
            return self._maybe_close(event, started)
        if isinstance(event, TrainingRunCompleted) and event.status == "failed" and not self._done(run, r):
            return self._close(complete(event, started, self._verdicts(run, r), PRODUCER))
        if isinstance(event, DECISIONS):
            return self._after_decision(event, started)
        return []

    def _dev(self, run_id: str) -> list[TaskSpecified]:
        return dev_slice(self._tasks(run_id, "dev"), self.config.dev_per_category)

    def _evaluations(self, run_id: str) -> list[DevSetEvaluated]:
        return [e for e in self._read(TOPIC_MODELS, run_id, DevSetEvaluated) if e.split == "dev"]

    def _decisions(self, run_id: str) -> list[HarnessRevisionDecided]:
        return self._read(TOPIC_HARNESS, run_id, HarnessRevisionDecided)

    def _paired_policy(self, published: HarnessVersionPublished, started: RoundStarted) -> str:
        """The model a revision is evaluated with: the run's best so far when it was evaluated on dev with the
        revision's parent (so the A/B pairs the same checkpoint on the same tasks), else the model whose dev
        result the revision answered (its parent evaluation by construction)."""
        run = started.run_id
        evaluations = self._evaluations(run)
        policy, _ = best_versions(started, evaluations, self._decisions(run))
        proposal = next(
            (
                p
                for p in self._read(TOPIC_HARNESS, run, HarnessRevisionProposed)
                if p.revision_id == published.revision_id
            ),
            None,
        )
        if proposal is None:
            return policy
        paired = {
            f"{e.model_name}/{e.model_version}" for e in evaluations if e.harness_version == proposal.base_version
        }
        if policy in paired:
            return policy
        cause = next((e for e in evaluations if e.event_id == proposal.causation_id), None)
        return f"{cause.model_name}/{cause.model_version}" if cause is not None else policy

    def _maybe_close(self, event: Event, started: RoundStarted) -> list[Event]:
        """Close the round once its model's dev evaluation is in and (with a reviser) the reviser has answered."""
        run, r = started.run_id, started.round
        if self._done(run, r):
            return []
        evaluations = self._evaluations(run)
        model_eval = [e for e in evaluations if e.round == r and e.evaluates == "model"]
        if not model_eval:
            return []
        if self.config.await_harness_revision and not harness_settled(
            r, self._read(TOPIC_HARNESS, run, HARNESS_ANSWERS), evaluations
        ):
            return []
        so_far = [e for e in evaluations if e.round is not None and e.round <= r]
        _, harness = best_versions(started, so_far, self._decisions(run))
        trained = model_eval[0]
        return self._close(
            complete(
                event,
                started,
                self._verdicts(run, r),
                PRODUCER,
                f"{trained.model_name}/{trained.model_version}",
                trained.overall,
                harness if harness != started.harness_version else None,
            )
        )

    def _train_ids(self, run_id: str) -> set[str]:
        """The ids of the run's train tasks (shared: callers do not modify it)."""
        return self._view(TOPIC_TASKS, run_id, TaskSpecified).task_ids.get("train", set())

    def _verdicts(self, run_id: str, round_: int) -> list[EpisodeVerified]:
        train = self._train_ids(run_id)
        return [
            v for v in self._view(TOPIC_VERDICTS, run_id, EpisodeVerified).groups.get(round_, []) if v.task_id in train
        ]

    def _after_decision(self, event: Event, started: RoundStarted) -> list[Event]:
        run, r = started.run_id, started.round
        if ("curated", r) in self._fired or self._done(run, r):
            return []
        if any(e.round == r for e in self._read(TOPIC_MODELS, run, TrainingRequested)):
            return []
        train = self._train_ids(run)
        verdicts = self._verdicts(run, r)
        asked = self._retries(event, started, verdicts)
        decisions = self._view(TOPIC_CURATION, run, DECISIONS)
        decided = {e.episode_id for e in decisions.groups.get(r, []) if e.task_id in train}
        retried = {e for e in decided if retried_episode(e) is not None}
        if len(decided - retried) < started.planned_rollouts or len(retried) < awaited_retries(
            verdicts, started, self.config
        ):
            return asked
        # Every training run learns from all admitted trajectories so far (the dataset is the whole curated log).
        admitted = len(
            {
                e.episode_id
                for e in decisions.events
                if isinstance(e, TrajectoryAdmitted) and e.task_id in train and e.round is not None and e.round <= r
            }
        )
        self._fired.add(("curated", r))
        out = after_curation(event, started, admitted, verdicts, self.config, PRODUCER)
        return asked + (self._close(out) if isinstance(out, RoundCompleted) else [out])

    def _retries(self, decision: Event, started: RoundStarted, verdicts: list[EpisodeVerified]) -> list[Event]:
        """The sampled retries of the decided episode when the model failed it (once per episode)."""
        if not self.config.failure_retries or decision.episode_id is None:
            return []
        request = retry_episode_id(decision.episode_id)
        if ("retry", request) in self._fired:
            return []
        verdict = next((v for v in verdicts if v.episode_id == decision.episode_id), None)
        task = next((t for t in self._tasks(started.run_id, "train") if t.task_id == decision.task_id), None)
        if verdict is None or task is None:
            return []
        asked = retries(verdict, task, started, self.config, PRODUCER)
        if asked:
            self._fired.add(("retry", request))
        return list(asked)

    def _close(self, done: RoundCompleted) -> list[Event]:
        self._fired.add(("complete", done.round))
        return [done]


def build(config: RoundConfig | None = None) -> ConsumerSpec:
    topics = (TOPIC_ROUNDS, TOPIC_SAMPLING, TOPIC_CURATION, TOPIC_MODELS, TOPIC_HARNESS)
    return ConsumerSpec(NAME, topics, RoundController(config or RoundConfig()).handle, frozenset(), VERSION)
