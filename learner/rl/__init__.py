"""Online agentic RL through the bus: groups of G rollouts per task run by the rollout workers, CARE rewards
from the verifier's EpisodeVerified, a GRPO update on the behaviour log-probs the episodes carry."""

from learner.rl.config import RlSettings
from learner.rl.loop import NoRollouts, RlState, RlStepReport, run_steps

__all__ = ["NoRollouts", "RlSettings", "RlState", "RlStepReport", "run_steps"]
