"""Training data from events: episodes re-rendered exactly as the harness showed them, loss on the model's turns."""

from learner.dataset.build import DatasetBuild, build_dataset
from learner.dataset.episodes import EpisodeLog, read_log
from learner.dataset.render import RenderMismatch, rerender_episode
from learner.dataset.tokenize import tokenize_examples

__all__ = [
    "DatasetBuild",
    "EpisodeLog",
    "RenderMismatch",
    "build_dataset",
    "read_log",
    "rerender_episode",
    "tokenize_examples",
]
