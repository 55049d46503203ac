"""Turns judged rollouts into training samples: per model turn, windowed prompt + the policy's own tokens."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness_service.config import HarnessConfig
from harness_service.context.messages import render_messages
from harness_service.skills.library import SkillLibrary
from learner.care.rewards import EpisodeCost
from learner.dataset.episodes import EpisodeLog
from learner.dataset.render import BlobReader, RenderMismatch, rerender_episode
from learner.dataset.tokenize import tokenize_example
from learner.model.policy import PromptWindow, sample_key

_log = logging.getLogger(__name__)
_VERSION = re.compile(r"(\d+)$")


@dataclass(frozen=True)
class Rollout:
    """A judged top-level episode of a requested group."""

    episode_id: str
    group_id: str
    capability: str
    policy_version: str
    succeeded: bool
    score: float
    cost: EpisodeCost


@dataclass(frozen=True)
class TokenSample:
    """One model turn: token ids, which of them the policy wrote (loss mask), and its episode's advantage."""

    input_ids: list[int]
    completion_mask: list[int]
    advantage: float


def version_number(policy_version: str) -> int | None:
    """The trailing integer of a policy version label (``planner/7`` -> 7), or None."""
    match = _VERSION.search(policy_version)
    return int(match.group(1)) if match else None


def judged_rollouts(log: EpisodeLog, group_ids: Iterable[str], current_version: int, max_staleness: int) -> list[Rollout]:
    """Finished, verified episodes of ``group_ids`` whose policy is at most ``max_staleness`` versions old."""
    wanted = set(group_ids)
    rollouts = []
    for record in log.episodes.values():
        started = record.started
        if started.group_id not in wanted or started.parent_episode_id is not None or record.ended is None:
            continue
        verdict = log.verdicts.get(started.episode_id)
        version = version_number(started.policy_version)
        if verdict is None:
            continue
        if version is None or not 0 <= current_version - version <= max_staleness:
            _log.info("rl: dropping stale rollout %s (%s)", started.episode_id, started.policy_version)
            continue
        ended = record.ended
        task = log.tasks.get(started.task_id)
        rollouts.append(
            Rollout(
                episode_id=started.episode_id,
                group_id=started.group_id or started.episode_id,
                capability=task.category if task is not None else "tool_use",
                policy_version=started.policy_version,
                succeeded=verdict.outcome == "success",
                score=verdict.score,
                cost=EpisodeCost(ended.output_tokens, ended.thinking_tokens, ended.tool_calls, ended.steps),
            )
        )
    return sorted(rollouts, key=lambda r: r.episode_id)


def token_samples(
    log: EpisodeLog,
    advantages: dict[str, float],
    config: HarnessConfig,
    skills: SkillLibrary,
    read: BlobReader,
    tokenizer: Any,
    window: PromptWindow,
    sampled: Mapping[str, list[int]] | None = None,
) -> list[TokenSample]:
    """Every model turn (valid or rejected) of each episode with an advantage; environment tokens carry no loss.

    A turn found in ``sampled`` (see ``PlannerPolicy``) is trained on the ids the policy sampled; others
    (e.g. rollouts of a remote worker) on the tokenized output text.
    """
    sampled = sampled or {}
    samples: list[TokenSample] = []
    for episode_id, advantage in sorted(advantages.items()):
        try:
            steps = rerender_episode(log, episode_id, config, skills, read)
        except RenderMismatch as exc:
            _log.warning("rl: skipping %s", exc)
            continue
        for step in steps:
            text = render_messages(step.messages)
            ids = sampled.get(sample_key(text, step.output))
            row = tokenize_example(tokenizer, window, text, step.output, ids)
            samples.append(TokenSample(row["input_ids"], row["completion_mask"], advantage))
    return samples


def pad(samples: Sequence[TokenSample], pad_id: int) -> tuple[Any, Any, Any, Any]:
    """Right-padded (input_ids, attention_mask, completion_mask, advantages) tensors."""
    import torch

    width = max(len(s.input_ids) for s in samples)
    ids = torch.full((len(samples), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(samples), width), dtype=torch.long)
    mask = torch.zeros((len(samples), width), dtype=torch.float32)
    for i, sample in enumerate(samples):
        n = len(sample.input_ids)
        ids[i, :n] = torch.tensor(sample.input_ids)
        attention[i, :n] = 1
        mask[i, :n] = torch.tensor(sample.completion_mask, dtype=torch.float32)
    advantages = torch.tensor([s.advantage for s in samples], dtype=torch.float32)
    return ids, attention, mask, advantages
