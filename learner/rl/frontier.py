"""The RL step's task focus: where a group of sampled attempts can disagree.

GRPO learns only from groups whose members score differently. A task the model never solves gives a group of
failures (advantage 0 everywhere), a task it always solves a group of successes; both spend rollouts on nothing.
The frontier is the train tasks of the templates the model solves sometimes: its own judged episodes (not the
reference solver's) on the template have a success rate above 0 and below ``mastered_at``. Tasks of a template
are interchangeable instances of one skill, so competence is pooled per template rather than per instance (an
instance the model was shown once is rarely rolled out again).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bus_schemas.events import EpisodeVerified, TaskSpecified


@dataclass(frozen=True)
class Frontier:
    tasks: list[TaskSpecified]
    """The frontier's tasks, or the whole pool when it is empty (nothing learned about the model yet)."""
    templates: dict[str, float]
    """Frontier template -> the model's success rate on it."""

    @property
    def fallback(self) -> bool:
        """True when ``tasks`` is the whole pool (no template of the pool is on the frontier)."""
        return not self.templates


def template_of(task: TaskSpecified) -> str:
    """The template a task instantiates (recombined and generated tasks: their own id's first segment)."""
    return task.source.template_id or task.task_id.split("/", 1)[0]


def success_by_template(
    tasks: Iterable[TaskSpecified], verdicts: Iterable[EpisodeVerified]
) -> dict[str, tuple[int, int]]:
    """Template -> (successes, judged attempts) over ``verdicts`` (``error`` outcomes say nothing of the policy)."""
    templates = {t.task_id: template_of(t) for t in tasks}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for verdict in verdicts:
        template = templates.get(verdict.task_id)
        if template is None or verdict.outcome == "error":
            continue
        counts[template][0] += verdict.outcome == "success"
        counts[template][1] += 1
    return {t: (s, n) for t, (s, n) in counts.items()}


def frontier(
    pool: Sequence[TaskSpecified], verdicts: Iterable[EpisodeVerified], *, mastered_at: float = 0.9
) -> Frontier:
    """``pool``'s tasks whose template the model (``verdicts``: its own episodes) solves at a rate in
    (0, ``mastered_at``)."""
    rates = {t: s / n for t, (s, n) in success_by_template(pool, verdicts).items() if n and 0 < s / n < mastered_at}
    tasks = [t for t in pool if template_of(t) in rates]  # rates name only pool templates: empty iff rates is
    return Frontier(tasks or list(pool), rates)
