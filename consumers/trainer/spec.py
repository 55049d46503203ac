"""Wiring: TrainingRequested -> SFT (from scratch or continued from the base version) or GRPO steps -> events.
GRPO publishes its RolloutRequested groups itself and waits for the rollout workers and the verifier.

The learner's jobs (``learner.jobs``) do the work; this module turns a request into a call and the call
into events: TrainingRunStarted, TrainingRunCompleted, ModelVersionRegistered on success, or one
TrainingRunCompleted(status="failed") with the error when training cannot run (no data, a bad base
version), so the round controller can close the round instead of waiting forever.
The learner settings come from ``FLYWHEEL_LEARNER_CONFIG`` (a JSON file of ``LearnerConfig`` fields).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from bus_schemas.envelope import Event, Producer, correlate
from bus_schemas.events import TrainingRequested, TrainingRunCompleted
from bus_schemas.topics import TOPIC_MODELS
from infra.bootstrap import Ports
from infra.runtime import ConsumerSpec

NAME = "trainer"
VERSION = "0.1.0"
PRODUCER = Producer(service=NAME, version=VERSION)
CONFIG_ENV = "FLYWHEEL_LEARNER_CONFIG"
MAX_TRAINING_S = 6 * 3600.0
"""A training request may run this long without the trainer losing its group membership on Kafka."""
log = logging.getLogger("flywheel.trainer")

Progress = Callable[[int, int], None]


def load_learner_config(path: str | None = None):  # noqa: ANN201 (LearnerConfig; torch-heavy import kept lazy)
    from learner.config import LearnerConfig

    path = path or os.environ.get(CONFIG_ENV)
    return LearnerConfig.model_validate_json(Path(path).read_text()) if path else LearnerConfig()


def base_version(request: TrainingRequested) -> str | None:
    """``planner/3`` -> ``3``; None (from scratch) when the base is not a version of the requested model."""
    ref = request.base_model_version
    if not ref:
        return None
    name, _, version = ref.removeprefix("models:/").rpartition("/")
    return version if name == request.model_name and version.isdigit() else None


class Trainer:
    def __init__(self, config=None, progress: Progress | None = None, pump: Callable[[], int] | None = None) -> None:  # noqa: ANN001
        self._config = config  # a LearnerConfig (read from FLYWHEEL_LEARNER_CONFIG on first use when None)
        self.progress = progress
        self.pump = pump
        """RL waits for its rollouts on the bus; in one process this runs the rollout worker and verifier meanwhile."""

    @property
    def config(self):  # noqa: ANN201
        if self._config is None:
            self._config = load_learner_config()
        return self._config

    def handle(self, event: Event, ports: Ports) -> list[Event]:
        assert isinstance(event, TrainingRequested)
        from learner.jobs import run_rl, run_sft
        from learner.registry import registered_for_request

        replayed = registered_for_request(ports.registry, event.model_name, event.event_id)
        if replayed is not None:  # trained and registered before a crash that came ahead of the commit
            log.info(
                "round %s: request %s already registered %s; publishing its events again, not training twice",
                event.round,
                event.event_id,
                next(
                    (getattr(e, "model_version", "") for e in replayed if e.event_type == "ModelVersionRegistered"), "?"
                ),
            )
            return self._caused_by(event, replayed)
        config = self.config.model_copy(update={"model_name": event.model_name})
        parent = base_version(event)
        started = time.perf_counter()
        log.info(
            "round %s: %s training of %s from %s on %d admitted trajectories",
            event.round,
            event.algorithm,
            event.model_name,
            parent or "scratch",
            event.admitted_trajectories,
        )
        try:
            if event.algorithm == "rl" and parent is not None:  # GRPO (after continued SFT with rl.sft_steps > 0)
                outcome, _ = run_rl(
                    ports,
                    config,
                    parent,
                    steps=config.rl.steps_per_round,
                    run_id=event.run_id,
                    round=event.round or 0,
                    progress=self.progress,
                    publish=False,
                    pump=self.pump,
                    sft_steps=config.rl.sft_steps,
                    request_id=event.event_id,
                )
            else:
                outcome = run_sft(
                    ports,
                    config,
                    run_id=event.run_id,
                    round=event.round or 0,
                    base_version=parent,
                    progress=self.progress,
                    publish=False,
                    request_id=event.event_id,
                )
        except ValueError as exc:  # no trainable data, an unknown base version: a failed run, not a poison event
            log.error("round %s: training failed: %s", event.round, exc)
            return [
                TrainingRunCompleted(
                    producer=PRODUCER,
                    **correlate(event),
                    model_name=event.model_name,
                    training_run_id=f"failed-{event.event_id}",
                    status="failed",
                    steps=0,
                    wall_time_s=time.perf_counter() - started,
                    error=str(exc)[:2000],
                )
            ]
        log.info(
            "round %s: registered %s/%s (%s)",
            event.round,
            event.model_name,
            outcome.model_version,
            ", ".join(f"{k}={v:.3g}" for k, v in outcome.metrics.items()),
        )
        return self._caused_by(event, outcome.events)

    @staticmethod
    def _caused_by(request: Event, events: list[Event]) -> list[Event]:
        return [
            e.model_copy(update={"causation_id": request.event_id}) if e.causation_id is None else e for e in events
        ]


def build(config=None, progress: Progress | None = None, pump: Callable[[], int] | None = None) -> ConsumerSpec:  # noqa: ANN001
    return ConsumerSpec(
        NAME,
        (TOPIC_MODELS,),
        Trainer(config, progress, pump).handle,
        frozenset({"TrainingRequested"}),
        VERSION,
        max_handle_s=MAX_TRAINING_S,
    )
