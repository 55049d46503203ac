"""Planner models: a tiny Qwen3-architecture model with a project-trained tokenizer, or a local checkpoint."""

from learner.model.factory import TinyModelConfig, build_tiny_model, load_checkpoint, save_checkpoint
from learner.model.policy import PlannerPolicy, PromptWindow
from learner.model.tokenizer import CHAT_TEMPLATE, train_tokenizer

__all__ = [
    "CHAT_TEMPLATE",
    "PlannerPolicy",
    "PromptWindow",
    "TinyModelConfig",
    "build_tiny_model",
    "load_checkpoint",
    "save_checkpoint",
    "train_tokenizer",
]
