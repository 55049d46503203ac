"""Competence per task and per capability: success rate over recent attempts and its variance."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bus_schemas.events import EpisodeVerified

WINDOW = 8  # recent attempts that count


@dataclass(frozen=True)
class Competence:
    attempts: int
    success_rate: float

    @property
    def variance(self) -> float:
        """Bernoulli variance across attempts: highest when the task is solved half the time."""
        return self.success_rate * (1.0 - self.success_rate)


def competence_by_task(verdicts: Iterable[EpisodeVerified], window: int = WINDOW) -> dict[str, Competence]:
    """Judged verdicts (``error`` ones say nothing of the policy), oldest first by (time, id) so replay agrees."""
    history: dict[str, list[bool]] = {}
    for v in sorted(verdicts, key=lambda v: (v.occurred_at, v.event_id)):
        if v.outcome != "error":
            history.setdefault(v.task_id, []).append(v.outcome == "success")
    return {t: Competence(len(h[-window:]), sum(h[-window:]) / len(h[-window:])) for t, h in history.items()}
