"""CARE: competence-aware rewards (succeed first, then be cheap), calibrated advantages, a
bounded schedule controller."""

from learner.care.advantages import AdvantageSettings, Scored, calibrate
from learner.care.competence import competence_gate, measure_competence
from learner.care.controller import ControllerInputs, RuleController, choose_schedule
from learner.care.rewards import EpisodeCost, RewardBreakdown, shaped_reward
from learner.care.schedules import SCHEDULES, RewardSchedule

__all__ = [
    "SCHEDULES",
    "AdvantageSettings",
    "ControllerInputs",
    "EpisodeCost",
    "RewardBreakdown",
    "RewardSchedule",
    "RuleController",
    "Scored",
    "calibrate",
    "choose_schedule",
    "competence_gate",
    "measure_competence",
    "shaped_reward",
]
