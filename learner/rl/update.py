"""The GRPO policy update: PPO-clipped importance ratio against the behaviour log-probs, optional KL to a reference.

The ratio is pi_theta(token) / pi_behaviour(token), where pi_behaviour's log-probs were recorded by the
rollout worker when it sampled the token (same temperature). On-policy it is 1 up to float error; for
stale rollouts (sampled before the previous update, ``max_staleness``) it corrects for the policy change,
and clip + dual-clip truncate the weight so a token the policy has moved far from cannot dominate.
"""

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
    mean_abs_log_ratio: float = 0.0
    """Mean |log pi_theta - log pi_behaviour| over action tokens, before the step: 0 on-policy, > 0 when stale."""
    max_ratio: float = 1.0


def token_logprobs(model: Any, ids: Any, attention: Any, temperature: float = 1.0) -> Any:
    """log p(token_t | tokens_<t) for t >= 1 at ``temperature`` (trl's memory-lean selective log-softmax)."""
    from trl.trainer.utils import selective_log_softmax

    logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
    return selective_log_softmax(logits / temperature, ids[:, 1:])


def grpo_update(
    model: Any, optimizer: Any, samples: Sequence[TokenSample], settings: RlSettings, pad_id: int, reference: Any = None
) -> UpdateStats:
    """One optimizer step over ``samples`` (micro-batched); loss is averaged over the policy's action tokens only.

    The model is run in eval mode (no dropout) so the current log-probs are those the sampler computed.
    """
    import torch

    was_training = model.training
    model.eval()
    optimizer.zero_grad()
    total_tokens = sum(len(s.completion_ids) for s in samples)
    if total_tokens == 0:
        return UpdateStats(0.0, 0.0, 0.0, 0)
    loss_sum = kl_sum = clipped = abs_log_ratio = 0.0
    max_ratio = 0.0
    eps, dual = settings.clip_eps, settings.dual_clip
    for start in range(0, len(samples), settings.micro_batch):
        ids, attention, action, behaviour, advantages = pad(samples[start : start + settings.micro_batch], pad_id)
        ids, attention, action, behaviour, advantages = (
            t.to(model.device) for t in (ids, attention, action, behaviour, advantages)
        )
        logp = token_logprobs(model, ids, attention, settings.temperature)
        log_ratio = (logp - behaviour) * action
        ratio = torch.exp(log_ratio)
        adv = advantages[:, None]
        per_token = -torch.minimum(ratio * adv, torch.clamp(ratio, 1 - eps, 1 + eps) * adv)
        per_token = torch.where(adv < 0, torch.minimum(per_token, -dual * adv), per_token)  # dual clip
        if reference is not None and settings.beta > 0:
            with torch.no_grad():
                ref_logp = token_logprobs(reference, ids, attention, settings.temperature)
            delta = ref_logp - logp
            kl = torch.exp(delta) - delta - 1  # the k3 estimator, >= 0
            per_token = per_token + settings.beta * kl
            kl_sum += float((kl.detach() * action).sum())
        loss = (per_token * action).sum() / total_tokens
        loss.backward()
        loss_sum += float(loss.detach())
        detached = ratio.detach()
        clipped += float((((detached - 1).abs() > eps).float() * action).sum())
        abs_log_ratio += float(log_ratio.detach().abs().sum())
        max_ratio = max(max_ratio, float((detached * action).max()))
    torch.nn.utils.clip_grad_norm_(model.parameters(), settings.max_grad_norm)
    optimizer.step()
    model.train(was_training)
    return UpdateStats(
        loss_sum,
        kl_sum / total_tokens,
        clipped / total_tokens,
        int(total_tokens),
        abs_log_ratio / total_tokens,
        max_ratio,
    )
