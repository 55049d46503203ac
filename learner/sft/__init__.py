"""Supervised cold start with trl's SFTTrainer on curated, re-rendered trajectories."""

from learner.sft.config import SftSettings
from learner.sft.trainer import SftResult, train_sft

__all__ = ["SftResult", "SftSettings", "train_sft"]
