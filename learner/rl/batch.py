"""Turns judged group members into training samples: per model turn, the exact prompt and sampled ids the
policy saw and wrote, with their behaviour log-probs, the episode's advantage and how stale its policy was."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from learner.care.rewards import EpisodeCost
from learner.rl.rollouts import Member, RolloutReader

_log = logging.getLogger(__name__)


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
    staleness: int
    """Updates applied between the weights that sampled it and the weights it trains."""


@dataclass(frozen=True)
class TokenSample:
    """One model turn: prompt ids, sampled completion ids, their behaviour log-probs, the advantage, staleness."""

    prompt_ids: list[int]
    completion_ids: list[int]
    behaviour_logprobs: list[float]
    advantage: float
    staleness: int = 0

    @property
    def input_ids(self) -> list[int]:
        return self.prompt_ids + self.completion_ids


def rollout_of(member: Member, capability: str, staleness: int) -> Rollout:
    ended = member.ended
    return Rollout(
        episode_id=member.episode_id,
        group_id=member.request.group_id or member.request.episode_id,
        capability=capability,
        policy_version=member.started.policy_version,
        succeeded=member.verdict.outcome == "success",
        score=member.verdict.score,
        cost=EpisodeCost(ended.output_tokens, ended.thinking_tokens, ended.tool_calls, ended.steps),
        staleness=staleness,
    )


def token_samples(
    members: Sequence[Member],
    advantages: Mapping[str, float],
    staleness: Mapping[str, int],
    reader: RolloutReader,
    read: Callable[[Any], bytes],
) -> list[TokenSample]:
    """Every sampled model turn (valid or rejected, sub-agents' included) of each member with an advantage."""
    samples: list[TokenSample] = []
    for member in members:
        advantage = advantages.get(member.episode_id)
        if advantage is None:
            continue
        missing = 0
        for action in member.actions:
            sampled = reader.behaviour(action, read)
            if sampled is None or not sampled.completion_ids:
                missing += 1
                continue
            samples.append(
                TokenSample(
                    list(sampled.prompt_ids),
                    list(sampled.completion_ids),
                    list(sampled.logprobs),
                    advantage,
                    staleness.get(member.episode_id, 0),
                )
            )
        if missing:
            _log.warning("rl: %s: %d turns without behaviour log-probs (not trained on)", member.episode_id, missing)
    return samples


def pad(samples: Sequence[TokenSample], pad_id: int) -> tuple[Any, Any, Any, Any, Any]:
    """Right-padded (input_ids, attention_mask, action_mask, behaviour_logprobs, advantages); the masks and
    log-probs are aligned with next-token predictions (position t predicts token t+1)."""
    import torch

    width = max(len(s.input_ids) for s in samples)
    ids = torch.full((len(samples), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(samples), width), dtype=torch.long)
    action = torch.zeros((len(samples), width - 1), dtype=torch.float32)
    behaviour = torch.zeros((len(samples), width - 1), dtype=torch.float32)
    for i, sample in enumerate(samples):
        n, p, c = len(sample.input_ids), len(sample.prompt_ids), len(sample.completion_ids)
        ids[i, :n] = torch.tensor(sample.input_ids)
        attention[i, :n] = 1
        action[i, p - 1 : p - 1 + c] = 1.0
        behaviour[i, p - 1 : p - 1 + c] = torch.tensor(sample.behaviour_logprobs, dtype=torch.float32)
    advantages = torch.tensor([s.advantage for s in samples], dtype=torch.float32)
    return ids, attention, action, behaviour, advantages
