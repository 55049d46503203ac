"""Trainer: the learner as a consumer — TrainingRequested -> a training run -> a registered model version."""
