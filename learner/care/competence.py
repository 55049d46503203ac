"""Competence per capability (recent success rate) and the gate that turns cost terms on as it grows."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable


def measure_competence(outcomes: Iterable[tuple[str, bool]], prior: dict[str, float] | None = None) -> dict[str, float]:
    """Success rate per capability from (capability, succeeded) pairs; capabilities without data keep ``prior``."""
    wins: dict[str, list[bool]] = defaultdict(list)
    for capability, succeeded in outcomes:
        wins[capability].append(succeeded)
    measured = dict(prior or {})
    measured.update({c: sum(w) / len(w) for c, w in wins.items()})
    return measured


def competence_gate(competence: float, low: float = 0.3, high: float = 0.8) -> float:
    """0 below ``low`` (learn to succeed first), 1 above ``high`` (then to be cheap), linear in between."""
    if high <= low:
        raise ValueError(f"gate needs low < high, got {low} >= {high}")
    return min(1.0, max(0.0, (competence - low) / (high - low)))
