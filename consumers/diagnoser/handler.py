"""Pure diagnosis of one failed verdict: the first matching rule is the attribution."""

from __future__ import annotations

from bus_schemas.envelope import Producer, correlate
from bus_schemas.events import EpisodeVerified, FailureDiagnosed, TaskSpecified
from consumers.common.episode import EpisodeRecord
from consumers.diagnoser.assist import ModelAssist
from consumers.diagnoser.rules import findings

VERSION = "0.2.0"  # 0.2.0: sees rejected outputs and sub-agents; invalid_output; evidence-based confidence


def diagnose(
    verdict: EpisodeVerified,
    task: TaskSpecified,
    episode: EpisodeRecord,
    producer: Producer,
    assist: ModelAssist | None = None,
) -> FailureDiagnosed:
    """Rules first; with ``assist``, a model may name the label when the rules are unsure."""
    found = findings(task, episode, verdict)
    if assist is not None:
        found = assist.review(task, episode, verdict, found)
    first = found[0]
    secondary = list(dict.fromkeys(f.label for f in found[1:] if f.label != first.label))
    return FailureDiagnosed(
        producer=producer,
        **correlate(verdict),
        attribution=first.label,
        secondary=secondary,
        step=first.step,
        explanation=first.explanation[:16384],
        evidence=list(verdict.evidence),
        confidence=first.confidence,
        diagnoser_version=VERSION,
    )
