"""The GRPO-style policy update: clipped ratio x advantage on the policy's own tokens, optional KL to a reference."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from learner.rl.batch import TokenSample, pad
from learner.rl.config import RlSettings


@dataclass(frozen=True)
class UpdateStats:
    loss: float
    kl: float
    clip_fraction: float
    tokens: int


def token_logprobs(model: Any, ids: Any, attention: Any) -> Any:
    """log p(token_t | tokens_<t) for t >= 1 (trl's memory-lean selective log-softmax)."""
    from trl.trainer.utils import selective_log_softmax

    logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
    return selective_log_softmax(logits, ids[:, 1:])


def grpo_update(
    model: Any, optimizer: Any, samples: Sequence[TokenSample], settings: RlSettings, pad_id: int, reference: Any = None
) -> UpdateStats:
    """One optimizer step over ``samples`` (micro-batched); loss is averaged over the policy's action tokens only.

    Rollouts were sampled from the same weights, so the old log-probs are the current ones, detached; the
    clip matters once a stale (older-version) rollout is accepted or several epochs reuse a batch.
    """
    import torch

    model.train()
    optimizer.zero_grad()
    total_tokens = sum(sum(s.completion_mask) for s in samples)
    if total_tokens == 0:
        return UpdateStats(0.0, 0.0, 0.0, 0)
    loss_sum = kl_sum = clipped = 0.0
    for start in range(0, len(samples), settings.micro_batch):
        ids, attention, mask, advantages = pad(samples[start : start + settings.micro_batch], pad_id)
        ids, attention, mask, advantages = (t.to(model.device) for t in (ids, attention, mask, advantages))
        action = mask[:, 1:]
        logp = token_logprobs(model, ids, attention)
        ratio = torch.exp(logp - logp.detach())
        adv = advantages[:, None]
        bounded = torch.clamp(ratio, 1 - settings.clip_eps, 1 + settings.clip_eps)
        per_token = -torch.minimum(ratio * adv, bounded * adv)
        if reference is not None and settings.beta > 0:
            with torch.no_grad():
                ref_logp = token_logprobs(reference, ids, attention)
            delta = ref_logp - logp
            kl = torch.exp(delta) - delta - 1  # the k3 estimator, >= 0
            per_token = per_token + settings.beta * kl
            kl_sum += float((kl.detach() * action).sum())
        loss = (per_token * action).sum() / total_tokens
        loss.backward()
        loss_sum += float(loss.detach())
        clipped += float((((ratio.detach() - 1).abs() > settings.clip_eps).float() * action).sum())
    torch.nn.utils.clip_grad_norm_(model.parameters(), settings.max_grad_norm)
    optimizer.step()
    return UpdateStats(loss_sum, kl_sum / total_tokens, clipped / total_tokens, int(total_tokens))
