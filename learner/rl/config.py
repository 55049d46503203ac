"""Every knob of the RL loop; small defaults for two CPU cores, raised on a GPU."""

from __future__ import annotations

from typing import Annotated, Literal

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
    """PPO clip of the ratio pi_theta / pi_behaviour (behaviour log-probs travel with each sampled turn)."""
    dual_clip: Annotated[float, Field(gt=1)] = 3.0
    """Dual-clip bound for negative advantages: a stale token's loss is at most ``dual_clip * |A|`` however
    large its ratio (with clip_eps, the importance weights of stale samples are truncated on both sides)."""
    temperature: Annotated[float, Field(gt=0)] = 1.0
    """Sampling temperature of RL rollouts (sent on each RolloutRequested; the ratio uses the same one)."""
    max_staleness: Annotated[int, Field(ge=0)] = 1
    """Rollouts from weights more than this many updates behind the trained ones are not trained on. With 1,
    the next step's rollouts are requested before this step's update (workers sample while the learner trains)."""
    focus: Literal["pool", "frontier"] = "pool"
    """Which train tasks the steps sample: ``pool`` all of them; ``frontier`` those of templates the model solves
    sometimes (its own judged episodes so far), where a group can disagree (``learner.rl.frontier``)."""
    steps_per_round: Annotated[int, Field(ge=1)] = 4
    """GRPO steps of one training run (a round of ``--algorithm rl`` or ``mixed``)."""
    sft_steps: Annotated[int, Field(ge=0)] = 0
    """The mixed schedule: this many continued-SFT steps on the admitted data before the GRPO steps, in one
    training run (0: GRPO only)."""
    rollout_timeout_s: Annotated[float, Field(gt=0)] = 900.0
    """How long a step waits for its groups; then it trains on the complete ones (none: the run fails)."""
    micro_batch: Annotated[int, Field(ge=1)] = 16
    max_grad_norm: Annotated[float, Field(gt=0)] = 1.0
    seed: int = 0
    advantages: AdvantageSettings = Field(default_factory=AdvantageSettings)
