"""Every knob of the RL loop; small defaults for two CPU cores, raised on a GPU."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from learner.care.advantages import AdvantageSettings


class RlSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    group_size: Annotated[int, Field(ge=2)] = 4
    """G: episodes per task sampled together; advantages are relative within the group."""
    tasks_per_step: Annotated[int, Field(ge=1)] = 4
    learning_rate: Annotated[float, Field(gt=0)] = 5e-5
    """Small: trial runs collapsed at lr >= 1e-3."""
    beta: Annotated[float, Field(ge=0)] = 0.0
    """KL weight against the frozen reference (the model at the start of RL); 0 disables it."""
    clip_eps: Annotated[float, Field(gt=0)] = 0.2
    temperature: Annotated[float, Field(gt=0)] = 1.0
    max_staleness: Annotated[int, Field(ge=0)] = 1
    """Rollouts from a policy more than this many versions behind the current one are not trained on."""
    micro_batch: Annotated[int, Field(ge=1)] = 16
    max_grad_norm: Annotated[float, Field(gt=0)] = 1.0
    seed: int = 0
    advantages: AdvantageSettings = Field(default_factory=AdvantageSettings)
