"""Advantage calibration: group-normalised, zero-variance groups dropped, scaled per capability, clipped."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict


class AdvantageSettings(BaseModel):
    """``scale = 1 + boost * (target - competence)``: capabilities below target take bigger steps."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    eps: float = 1e-6
    """A group whose reward std is below this carries no signal and is dropped."""
    clip: float = 3.0
    boost: float = 1.0
    target: float = 0.8
    min_scale: float = 0.25


@dataclass(frozen=True)
class Scored:
    """One episode's reward, its GRPO group and its capability."""

    episode_id: str
    group_id: str
    capability: str
    reward: float


def capability_scale(competence: float, settings: AdvantageSettings) -> float:
    return max(settings.min_scale, 1.0 + settings.boost * (settings.target - competence))


def calibrate(
    scored: Sequence[Scored], competence: dict[str, float], settings: AdvantageSettings | None = None
) -> dict[str, float]:
    """episode_id -> advantage = clip(scale_c * (r - mean_g) / std_g); episodes of zero-variance groups are absent.

    ``std_g`` is the population standard deviation of the group's rewards.
    """
    settings = settings or AdvantageSettings()
    groups: dict[str, list[Scored]] = defaultdict(list)
    for item in scored:
        groups[item.group_id].append(item)
    advantages: dict[str, float] = {}
    for members in groups.values():
        rewards = [m.reward for m in members]
        mean = sum(rewards) / len(rewards)
        std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
        if std < settings.eps:
            continue
        for member in members:
            scale = capability_scale(competence.get(member.capability, 0.0), settings)
            value = scale * (member.reward - mean) / std
            advantages[member.episode_id] = max(-settings.clip, min(settings.clip, value))
    return advantages
