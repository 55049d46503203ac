"""Online agentic RL: groups of G bus rollouts per task, CARE rewards from EpisodeVerified, a GRPO-style update."""

from learner.rl.config import RlSettings
from learner.rl.loop import RlState, RlStepReport, rl_step
from learner.rl.worker import rollout_worker_spec

__all__ = ["RlSettings", "RlState", "RlStepReport", "rl_step", "rollout_worker_spec"]
