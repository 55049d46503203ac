"""Rollout workers: consume RolloutRequested, run (group) episodes through the harness,
publish them, recover crashes."""

from producers.rollout.ids import episode_id_for
from producers.rollout.worker import RolloutWorker, WorkerStats

__all__ = ["RolloutWorker", "WorkerStats", "episode_id_for"]
